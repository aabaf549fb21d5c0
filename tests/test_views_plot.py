import builtins

import pytest

from gpubench.views import plot
from gpubench.core.errors import GpubenchError


def test_plot_writes_an_image(make_run, tmp_path):
    pytest.importorskip("matplotlib")
    out = plot.plot(make_run(), tmp_path / "p.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_series_take_each_variants_best_config(make_run):
    series = plot._series(make_run(), "gemm", "N×N×N")
    assert set(series) == {"tiled", "cublas"} and [p.problem.m for p in series["tiled"]] == [1024, 2048]


def test_a_line_joins_only_problems_that_differ_in_size():
    """Square GEMMs are one series and odd M×N×K none; conv layers with other channels or strides are others."""
    from gpubench.ops.gemm import GemmShape
    from gpubench.ops.conv import conv_shape

    assert GemmShape(512, 512, 512).series == GemmShape(4096, 4096, 4096).series
    assert GemmShape(1000, 1500, 777).series is None
    layer = conv_shape(56, 1, batch=32, in_channels=64, out_channels=64, padding=1)
    assert layer.series == conv_shape(28, 1, batch=32, in_channels=64, out_channels=64, padding=1).series
    assert layer.series != conv_shape(28, 1, batch=32, in_channels=128, out_channels=128, padding=1).series
    assert conv_shape(512, 1).series != conv_shape(512, 2).series


def test_each_panel_is_one_series(make_run):
    run = make_run()
    panels = {plot._panel(p) for p in run.points}
    for panel in panels - {None}:
        for points in plot._series(run, run.points[0].op, panel).values():
            assert {p.problem.series for p in points} == {panel}


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
    from gpubench.core.errors import GpubenchError

    with pytest.raises(GpubenchError, match="no roofline ceilings"):
        plot.roofline_plot(make_run(), tmp_path / "roof.png")


def test_neither_mplbackend_nor_a_glyph_the_font_lacks_troubles_a_plot(make_run, run_file, tmp_path):
    """matplotlib's import raised on an MPLBACKEND it does not know (gpubench draws with Agg anyway), and a variant
    named with an emoji got four lines of warnings on stderr (a traceback under PYTHONWARNINGS=error)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("matplotlib")
    path = Path(run_file(make_run(clocks=1980)))
    path.write_text(path.read_text(encoding="utf-8").replace('"variant": "tiled"', '"variant": "\\ud83d\\udd25"'),
                    encoding="utf-8")
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, MPLBACKEND="garbage", PYTHONWARNINGS="error::UserWarning", PYTHONPATH=str(root))
    for roofline in ([], ["--roofline"]):
        r = subprocess.run([sys.executable, "-m", "gpubench", "plot", str(path), *roofline, "-o",
                            str(tmp_path / f"p{len(roofline)}.png")], env=env, capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", r.stderr


def test_the_plot_command_s_help_names_the_extra():
    from click.testing import CliRunner

    from gpubench.cli import cli

    assert "pip install 'gpubench[plot]'" in " ".join(CliRunner().invoke(cli, ["plot", "--help"]).output.split())
