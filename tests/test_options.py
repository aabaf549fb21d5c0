import pytest

from gpubench import options
from gpubench.ops import params


def mnk(text):
    return params.triple(text, "--mnk")
from gpubench.core.errors import GpubenchError


def test_lists_parse_and_deduplicate():
    assert options.sizes("512, 1024,512") == (512, 1024)
    assert options.block_sizes("8,16,24,32") == (8, 16, 24, 32)
    assert mnk("1000,1500,777") == (1000, 1500, 777)
    assert mnk("64,64,64") == (64, 64, 64)
    assert options.names("a, b") == ["a", "b"] and options.names(None) is None
    with pytest.raises(GpubenchError, match="--variants is empty"):
        options.names(" , ")


@pytest.mark.parametrize("call,text", [(options.sizes, "1.5"), (options.sizes, "-1"), (options.block_sizes, "64"),
                                       (options.strides, "0"), (mnk, "1,2,3,4"), (mnk, "1,,3"),
                                       (options.sizes, "٣"), (options.sizes, "512,²"), (options.block_sizes, "１６"),
                                       (mnk, "1,2,٣"), (options.sizes, "9" * 5000)])
def test_bad_values(call, text):
    with pytest.raises(GpubenchError):
        call(text)


def test_padding_takes_ascii_digits_only():
    from gpubench.ops.conv import resolve_padding

    assert resolve_padding("3", 8, 3, 1) == 3
    with pytest.raises(GpubenchError, match="padding '٣' is not allowed"):
        resolve_padding("٣", 8, 3, 1)


@pytest.mark.parametrize("pace", ["idle", "sustained"])
def test_pace_is_taken_as_written(tmp_path, pace):
    """`--pace sustained`, as the help and the README write it (click 8.2 and later would take an enum's member
    names, IDLE and SUSTAINED, and refuse the values)."""
    from click.testing import CliRunner

    from gpubench import results
    from gpubench.cli import cli

    out = tmp_path / "p.json"
    settle = ["--settle", "0.01"] if pace == "sustained" else []
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "--budget", "0.01",
                                 "--pace", pace, *settle, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert {p.details.pace for p in results.load(out).points} == {pace}
