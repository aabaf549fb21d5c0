"""paths: the names gpubench gives the files it makes."""

from gpubench.core.paths import slug


def test_a_slug_is_lower_case_with_one_hyphen_for_each_run_of_other_characters():
    assert slug("NVIDIA H100 80GB HBM3", fallback="device") == "nvidia-h100-80gb-hbm3"
    assert slug("  NVIDIA  GeForce RTX/4090 ", fallback="device") == "nvidia-geforce-rtx-4090"


def test_a_slug_keeps_only_the_characters_it_is_asked_to():
    version = "frontend 1.32.0 / backend 9.15.0"
    assert slug(version, fallback="unknown", keep=".") == "frontend-1.32.0-backend-9.15.0"
    assert slug(version, fallback="unknown") == "frontend-1-32-0-backend-9-15-0"
    assert slug("a]b", fallback="x", keep="]") == "a]b"  # a character that means something in a regex class


def test_a_name_with_nothing_left_takes_the_fallback():
    assert slug("", fallback="device") == "device"
    assert slug("/// ...", fallback="unknown") == "unknown"
