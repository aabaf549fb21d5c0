import builtins

import pytest

from gpubench.views import plot
from gpubench.errors import GpubenchError


def test_plot_writes_an_image(make_run, tmp_path):
    pytest.importorskip("matplotlib")
    out = plot.plot(make_run(), tmp_path / "p.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_series_take_each_variants_best_config(make_run):
    series = plot._series(make_run(), "gemm", None)
    assert set(series) == {"tiled", "cublas"} and [p.problem.m for p in series["tiled"]] == [1024, 2048]


def test_missing_matplotlib_is_one_clear_error(make_run, tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(GpubenchError, match=r"pip install 'gpubench\[plot\]'"):
        plot.plot(make_run(), tmp_path / "p.png")


def test_roofline_plot(make_run, tmp_path):
    out = plot.roofline_plot(make_run(clocks=1980), tmp_path / "roof.png")
    assert out.stat().st_size > 10_000


def test_roofline_needs_ceilings(make_run, tmp_path):
    from gpubench.errors import GpubenchError

    with pytest.raises(GpubenchError, match="no roofline ceilings"):
        plot.roofline_plot(make_run(), tmp_path / "roof.png")
