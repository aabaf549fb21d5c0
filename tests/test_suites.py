import pytest

from gpubench import suites
from gpubench.errors import GpubenchError


@pytest.mark.parametrize("name", ["lab", "quick", "ci", "resnet"])
@pytest.mark.parametrize("backend", ["cuda", "cpu"])
def test_shipped_suites_load(name, backend):
    s = suites.load(f"configs/{name}.toml", backend)
    assert s.sweeps and all(len(w) > 0 for w in s.sweeps)


def test_lab_suite_is_the_lab():
    s = suites.load("lab", "cuda")
    gemm, conv, small = s.sweeps
    assert [v.name for v in gemm.variants] == ["global", "shared", "tiled", "cublas"]
    assert [x.m for x in gemm.shapes] == [512, 1024, 2048, 4096, 8192] and gemm.block_sizes == (8, 16, 24, 32)
    assert {(x.height, x.stride) for x in conv.shapes} == {(s, t) for s in (512, 1024, 2048, 4096, 8192)
                                                            for t in (1, 2, 3)}
    assert {v.name for v in conv.variants} >= {"sliding", "im2col", "im2col-cublas", "implicit", "cudnn"}
    assert min(x.height for x in small.shapes) == 32


def write(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text,match", [
    ("name = 1 2", "not valid TOML"),
    ('name = "x"', "no \\[\\[sweep\\]\\] tables"),
    ('colour = "red"\n[[sweep]]\nop = "gemm"\nsizes = [64]', "unknown key\\(s\\) colour"),
    ('[[sweep]]\nop = "fft"', "op must be one of gemm, conv"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nstrides = [2]', "unknown key\\(s\\) strides for op gemm"),
    ('[[sweep]]\nop = "gemm"\nsizes = [0]', "sizes must be a positive integer"),
    ('[[sweep]]\nop = "gemm"\nsizes = ["big"]', "sizes must be"),
    ('[[sweep]]\nop = "gemm"\nvariants = ["warp9"]\nsizes = [64]', "unknown gemm variant\\(s\\) warp9"),
    ('[[sweep]]\nop = "gemm"', "no shapes"),
    ('[[sweep]]\nop = "gemm"\nmnk = [[1, 2]]', "mnk entries must be"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nblock_sizes = [40]', "allowed 1..32"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nreps = -1', "reps must be a non-negative int"),
    ('[defaults]\nwarp = 1\n[[sweep]]\nop = "gemm"\nsizes = [64]', "\\[defaults\\] has unknown key"),
    ('[[sweep]]\nop = "conv"\nsizes = [8]\nbatch = "two"', "batch must be"),
])
def test_bad_suites_are_refused_with_the_key(tmp_path, text, match):
    with pytest.raises(GpubenchError, match=match):
        suites.load(write(tmp_path, text))


def test_impossible_combinations_are_skipped_with_the_reason(tmp_path):
    s = suites.load(write(tmp_path, '[[sweep]]\nname = "c"\nop = "conv"\nsizes = [4, 64]\nkernel = 7\n'
                                    'padding = "valid"\nreps = 7\nflush = false'))
    (sweep,) = s.sweeps
    assert [x.height for x in sweep.shapes] == [64]
    assert sweep.skipped[0][0] == "c: size 4 stride 1" and "larger than the padded input" in sweep.skipped[0][1]
    assert sweep.policy.reps == 7 and sweep.policy.flush is False


def test_cpu_backend_runs_its_own_variants(tmp_path):
    s = suites.load(write(tmp_path, '[[sweep]]\nop = "gemm"\nvariants = ["tiled"]\nsizes = [64]'), "cpu")
    assert [v.name for v in s.sweeps[0].variants] == ["numpy"]
    assert "cpu backend runs its NumPy variants" in s.sweeps[0].skipped[0][1]


def test_defaults_apply_and_sweeps_override(tmp_path):
    s = suites.load(write(tmp_path, '[defaults]\nreps = 9\nbudget = 2\n[[sweep]]\nop = "gemm"\nsizes = [64]\n'
                                    '[[sweep]]\nop = "gemm"\nsizes = [64]\nreps = 3\nmax_noise = 0.02'))
    a, b = s.sweeps
    assert (a.policy.reps, a.policy.budget_s, a.policy.max_noise) == (9, 2.0, None)
    assert (b.policy.reps, b.policy.budget_s, b.policy.max_noise, b.policy.min_reps) == (3, 2.0, 0.02, 3)


def test_shipped_lists_every_suite():
    names = [n for n, _ in suites.shipped()]
    assert names == sorted(names) and {"lab", "quick", "ci", "resnet"} <= set(names)
