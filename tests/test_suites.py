import re

import pytest

from gpubench.planning import suites
from gpubench.core.errors import GpubenchError
from gpubench.measure.stats import decidable


@pytest.mark.parametrize("name", ["lab", "quick", "ci", "resnet"])
@pytest.mark.parametrize("backend", ["cuda", "cpu"])
def test_shipped_suites_load(name, backend):
    s = suites.load(name, backend)
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


def test_the_labs_long_calls_stop_as_soon_as_they_could_be_decided():
    """On a GPU the lab samples until a comparison at 5% among its points could be decided; its `reps` is the
    least a call timed one at a time takes (a short call's batches take more at once). More than one over the
    fewest samples that can ever be decidable costs seconds per point and decides nothing more."""
    s = suites.load("lab", "cuda")
    family = sum(len(w) for w in s.sweeps)
    policy = s.sweeps[0].policy
    fewest = next(n for n in range(2, 100) if decidable([1.0] * n, policy.decide, family))
    assert all(w.policy.reps == policy.reps for w in s.sweeps)
    assert fewest <= policy.reps <= fewest + 1


@pytest.mark.parametrize("name", [n for n, _ in suites.shipped()])
def test_no_shipped_suite_runs_a_point_twice(name):
    """compare refuses a file holding a point twice, so a suite whose sweeps overlap could not be compared."""
    points = [(w.op, shape, variant.name, config.label) for w in suites.load(name, "cuda").sweeps
              for shape, variant, config in w.points()]
    assert len(points) == len(set(points))


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
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nvariants = []', "variants must be a non-empty list"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64, 32]\n[[sweep]]\nop = "gemm"\nsizes = [32]',
     "sweeps gemm-0 and gemm-1 both measure gemm .* 32"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nreps = -1', "sweep\\[0\\].reps must be at least 5"),
    ('[defaults]\nreps = 0\n[[sweep]]\nop = "gemm"\nsizes = [64]', "defaults.reps must be at least 5"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nreps = 5.5', "reps must be an integer"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nbudget = "long"', "budget must be a finite number"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nmax_time = 0', "max_time must be more than 0"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nflush = 1', "flush must be true or false"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\npace = "hot"', "sweep\\[0\\].pace must be one of idle, sustained"),
    ('[defaults]\npace = 1\n[[sweep]]\nop = "gemm"\nsizes = [64]', "defaults.pace must be one of"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nsettle = -1', "sweep\\[0\\].settle must be 0 or more"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\ncooldown = -0.5', "sweep\\[0\\].cooldown must be 0 or more"),
    ('[defaults]\ncooldown = 3600\n[[sweep]]\nop = "gemm"\nsizes = [64]', "defaults.cooldown is seconds of idle "
     "before each point: at most 60"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\npace = "sustained"\ndiscard_throttled = true',
     "discard_throttled drops the samples of a power-limited GPU"),
    ('[[sweep]]\nop = "gemm"\nvariants = ["tiled"]\nsizes = [64]\nblock_sizes = [16]', "applies to the block-size"),
    ('sweep = 3', "no \\[\\[sweep\\]\\] tables"),
    ('sweep = [3]', "must be a table"),
    ('tf32 = "yes"\n[[sweep]]\nop = "gemm"\nsizes = [64]', "tf32 must be a bool"),
    ('[[sweep]]\nname = 3\nop = "gemm"\nsizes = [64]', "name must be a non-empty string"),
    ('[[sweep]]\nop = "conv"\nsizes = [64]\npadding = 1.5', "padding must be"),
    ('[defaults]\nwarp = 1\n[[sweep]]\nop = "gemm"\nsizes = [64]', "\\[defaults\\] has unknown key"),
    ('[[sweep]]\nop = "conv"\nsizes = [8]\nbatch = "two"', "batch must be"),
    ('[[sweep]]\nname = "g\\n"\nop = "gemm"\nsizes = [64]', "sweep\\[0\\].name must be a non-empty string of printable"),
    ('[[sweep]]\nname = " g"\nop = "gemm"\nsizes = [64]', "no surrounding spaces"),
    ('[[sweep]]\nname = "a\\u0000b"\nop = "gemm"\nsizes = [64]', "sweep\\[0\\].name must be"),
    ('name = "s\\n"\n[[sweep]]\nop = "gemm"\nsizes = [64]', "name must be a non-empty string of printable"),
    ('name = ""\n[[sweep]]\nop = "gemm"\nsizes = [64]', "name must be a non-empty string"),
    ('[[sweep]]\nop = "gemm"\nsizes = [9223372036854775808]', "at most 2\\*\\*63 - 1"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nconfigs = ["128x256x64 s4"]', "configs must be a table of variant"),
    ('[[sweep]]\nop = "gemm"\nvariants = ["cublas"]\nsizes = [64]\nconfigs = { "wgmma-tma" = ["x"] }',
     "configs: wgmma-tma is not among the sweep's variants \\(cublas\\)"),
    ('[[sweep]]\nop = "gemm"\nvariants = ["wgmma-tma"]\nsizes = [64]\ndtypes = ["bf16"]\nconfigs = { "wgmma-tma" = ["9x9"] }',
     "wgmma-tma has no configuration '9x9'; allowed are '"),
    ('[defaults]\nplaces = 0\n[[sweep]]\nop = "gemm"\nsizes = [64]', "places is how many sets of its buffers"),
    ('[[sweep]]\nop = "gemm"\nsizes = [64]\nplaces = 1.5', "places must be an integer"),
    ('timeout = 0\n[[sweep]]\nop = "gemm"\nsizes = [64]', "timeout: must be a number of seconds over 0"),
    ('timeout = "30"\n[[sweep]]\nop = "gemm"\nsizes = [64]', "timeout: must be a number of seconds"),
    ('timeout = true\n[[sweep]]\nop = "gemm"\nsizes = [64]', "timeout: must be a number of seconds"),
    ("a = " + "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[[sweep]]\nop = 'gemm'\nsizes = " + "[" * 100_000 + "]" * 100_000, "nested too deeply"),
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


def test_cpu_backend_runs_what_it_has_of_the_named_variants(tmp_path):
    s = suites.load(write(tmp_path, '[[sweep]]\nop = "gemm"\nvariants = ["tiled"]\nsizes = [64]'), "cpu")
    assert [v.name for v in s.sweeps[0].variants] == ["numpy"]
    assert "not on the cpu backend; it runs its NumPy variants" in s.sweeps[0].skipped[0][1]
    s = suites.load(write(tmp_path, '[[sweep]]\nop = "conv"\nvariants = ["sliding", "cudnn"]\nsizes = [64]'), "cpu")
    assert [v.name for v in s.sweeps[0].variants] == ["sliding"]


def test_defaults_apply_and_sweeps_override(tmp_path):
    s = suites.load(write(tmp_path, '[defaults]\nreps = 9\nbudget = 2\n[[sweep]]\nop = "gemm"\nsizes = [64]\n'
                                    '[[sweep]]\nop = "gemm"\nsizes = [128]\nreps = 6\nmax_noise = 0.02'))
    a, b = s.sweeps
    assert (a.policy.reps, a.policy.budget_s, a.policy.max_noise) == (9, 2.0, None)
    assert (b.policy.reps, b.policy.budget_s, b.policy.max_noise, b.policy.min_reps) == (6, 2.0, 0.02, 5)


def test_a_sweep_may_be_timed_sustained_and_the_command_line_overrides_every_sweep(tmp_path):
    from gpubench.measure.timing import Pace
    from gpubench.planning.settings import TimingSettings

    s = suites.load(write(tmp_path, '[defaults]\npace = "sustained"\nsettle = 2\n[[sweep]]\nop = "gemm"\n'
                                    'sizes = [64]\n[[sweep]]\nop = "gemm"\nsizes = [128]\npace = "idle"'))
    a, b = s.sweeps
    assert (a.policy.pace, a.policy.settle_s, b.policy.pace) == (Pace.SUSTAINED, 2.0, Pace.IDLE)
    assert a.settings()["timing"]["pace"] == "sustained"  # what the run file's settings keep
    over = TimingSettings(pace="sustained", settle=0.5).over(b.policy)
    assert (over.pace, over.settle_s, over.reps) == (Pace.SUSTAINED, 0.5, b.policy.reps)
    assert TimingSettings().over(b.policy) is b.policy


def test_a_projects_variants_can_be_named(tmp_path):
    from gpubench.specs import catalog
    from gpubench.specs import files

    (tmp_path / "k.py").write_text("def k(A, B, C, M, N, K):\n    C[...] = A @ B\n")
    mine = files.parse_specs({"variant": [{"name": "mine", "op": "gemm", "source": "k.py", "kernel": "k",
                                              "args": ["A", "B", "C", "M", "N", "K"]}]}, "gpubench.toml", tmp_path)
    known = catalog.Catalog.with_user(mine)
    s = suites.load(write(tmp_path, '[[sweep]]\nop = "gemm"\nvariants = ["mine", "numpy"]\nsizes = [64]'), "cpu",
                    known)
    assert [v.name for v in s.sweeps[0].variants] == ["numpy", "mine"]


def test_shipped_lists_every_suite():
    names = [n for n, _ in suites.shipped()]
    assert names == sorted(names) and {"lab", "quick", "ci", "resnet"} <= set(names)


def test_a_sweep_whose_every_shape_is_impossible_says_why(tmp_path):
    with pytest.raises(GpubenchError, match="no shapes to run: padding -1 is negative"):
        suites.load(write(tmp_path, '[[sweep]]\nop = "conv"\nsizes = [16]\npadding = -1'))


def test_conv_dimensions_are_one_value_per_sweep(tmp_path):
    with pytest.raises(GpubenchError, match="batch is one integer per sweep"):
        suites.load(write(tmp_path, '[[sweep]]\nop = "conv"\nsizes = [16]\nbatch = [1, 2]'))


def test_a_directory_or_nothing_is_not_a_suite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    with pytest.raises(GpubenchError, match="suite mine is a directory: give a suite file"):
        suites.load("mine")
    with pytest.raises(GpubenchError, match="the suite is empty"):
        suites.load("")
    (tmp_path / "lab").mkdir()  # a folder named like a shipped suite does not hide it
    assert suites.load("lab", "cpu").name == "lab"


def test_a_path_never_falls_back_to_a_shipped_suite(tmp_path, monkeypatch):
    """`run ./lab.toml` (a file the user meant, missing) ran the shipped lab suite, minutes of the wrong work; a bare
    name (lab, lab.toml) still names a shipped suite, and something that is not a file says so."""
    monkeypatch.chdir(tmp_path)
    assert suites.find("lab").name == suites.find("lab.toml").name == "lab.toml"
    for given in ("./lab", "./lab.toml", "sub/lab.toml", str(tmp_path / "lab.toml")):
        with pytest.raises(GpubenchError, match=f"suite {given} does not exist"):
            suites.find(given)
    with pytest.raises(GpubenchError, match="suite /dev/null is not a file"):
        suites.find("/dev/null")


def test_a_suite_with_a_byte_order_mark_loads(tmp_path):
    """Notepad and some Windows editors begin a UTF-8 file with a byte-order mark, which tomllib refuses as
    "Invalid statement (at line 1, column 1)"."""
    path = tmp_path / "s.toml"
    path.write_bytes(b"\xef\xbb\xbf" + '[[sweep]]\nop = "gemm"\nsizes = [16]\nvariants = ["numpy"]\n'.encode())
    assert [s.op for s in suites.load(path, backend="cpu").sweeps] == ["gemm"]


def test_the_int8_suite_is_resnets_layers_and_llamas_projections():
    """configs/int8-conv.toml: ResNet-50's four 3x3 layers, its stride-2 3x3 and a 1x1 bottleneck at N = 128, int8
    in NHWC and NCHW_VECT_C, bare and with bias-relu-add (the Hopper kernel in NHWC alone); the Llama-style int8
    GEMMs in nt, cuBLASLt's and the hand one."""
    from gpubench.core.dtypes import DType
    from gpubench.ops.conv import ConvLayout
    from gpubench.ops.epilogue import Epilogue

    s = suites.load("int8-conv", "cuda")
    convs = [w for w in s.sweeps if w.op == "conv"]
    layers = {(x.in_channels, x.out_channels, x.height, x.kernel, x.stride) for w in convs for x in w.shapes}
    assert layers == {(64, 64, 56, 3, 1), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1), (512, 512, 7, 3, 1),
                      (128, 128, 56, 3, 2), (64, 256, 56, 1, 1)}
    for w in convs:
        assert {v.name for v in w.variants} == {"cudnn", "tc-int8-mma", "tc-wgmma-int8"}
        # 2 layouts x 2 epilogues for tc-int8-mma's 3 configurations and cuDNN; tc-wgmma-int8's 21 (5 of them in
        # 2-block clusters, 2 of half tiles, 3 of 64-channel slices, 3 staging by warp, 4 on three consumer
        # warpgroups) in NHWC alone
        assert len(w) == 4 * (3 + 1) + 2 * 21
        assert {(x.batch, x.dtype) for x in w.shapes} == {(128, DType.INT8_INT8)}
        assert {x.layout for x in w.shapes} == {ConvLayout.NHWC, ConvLayout.NCHW_VECT_C}
        assert {x.fused.epilogue for x in w.shapes} == {Epilogue.NONE, Epilogue.BIAS_RELU_ADD}
    (gemm,) = [w for w in s.sweeps if w.op == "gemm"]
    assert {v.name for v in gemm.variants} == {"cublaslt", "int8-wgmma-tma"}
    assert {(x.m, x.n, x.k) for x in gemm.shapes} >= {(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096),
                                                       (8192, 4096, 14336)}


def test_the_fused_suite_sets_the_16_bit_fused_kernel_against_cudnns_graph():
    from gpubench.ops.epilogue import Epilogue

    s = suites.load("fused-conv", "cuda")
    assert len(s.sweeps) == 5
    for w in s.sweeps:
        assert {v.name for v in w.variants} == {"cudnn", "tc-wgmma-tma"}
        assert {x.fused.epilogue for x in w.shapes} == {Epilogue.BIAS_RELU_ADD} and len(w.shapes) == 2


def test_a_sweep_runs_only_the_configurations_its_configs_table_lists(tmp_path):
    """A target's rounds run the configuration fixed for them: the listed labels, in the listed order; the other
    variants keep all of theirs."""
    every = [c.label for c in next(v for v in suites.load(write(tmp_path, WGMMA), "cuda").sweeps[0].variants
                                   if v.name == "wgmma-tma").space.configs]
    assert len(every) > 2
    chosen = [every[2], every[0]]
    text = WGMMA + f'configs = {{ "wgmma-tma" = ["{chosen[0]}", "{chosen[1]}"] }}\n'
    sweep = suites.load(write(tmp_path, text), "cuda").sweeps[0]
    ran = [(variant.name, config.label) for _, variant, config in sweep.points()]
    assert ran == [("cublas", "-"), ("wgmma-tma", chosen[0]), ("wgmma-tma", chosen[1])]


WGMMA = '[[sweep]]\nop = "gemm"\nvariants = ["cublas", "wgmma-tma"]\nsizes = [256]\ndtypes = ["bf16"]\nlayouts = ["nt"]\n'


def test_a_configs_table_of_problems_gives_each_problem_its_own_configurations(tmp_path):
    """A target's rounds where pass 0 fixed different configurations for a sweep's problems: each problem runs its
    own, none the other's."""
    base = WGMMA.replace("sizes = [256]", "sizes = [256, 512]")
    every = [c.label for c in next(v for v in suites.load(write(tmp_path, base), "cuda").sweeps[0].variants
                                   if v.name == "wgmma-tma").space.configs]
    small, large = "256 BF16 NT", "512 BF16 NT"
    text = base + (f'configs = {{ "wgmma-tma" = {{ "{small}" = ["{every[1]}"], '
                   f'"{large}" = ["{every[0]}", "{every[2]}"] }} }}\n')
    sweep = suites.load(write(tmp_path, text), "cuda").sweeps[0]
    ran = [(shape.full_label, config.label) for shape, variant, config in sweep.points() if variant.name == "wgmma-tma"]
    assert ran == [(small, every[1]), (large, every[0]), (large, every[2])]
    from gpubench.execution.sweep import tasks
    assert [len(t.points) for t in tasks([sweep], seed=0)] == [2, 3]  # cuBLAS and what each problem pins


@pytest.mark.parametrize("table,match", [
    ('{ "wgmma-tma" = { "256 BF16 NT" = ["X"] } }', "wgmma-tma has no configuration 'X'"),
    ('{ "wgmma-tma" = { "999 BF16 NT" = ["LABEL"] } }',
     "wgmma-tma names problem '999 BF16 NT', which it does not run in this sweep; its problems are '256 BF16 NT'"),
    ('{ "wgmma-tma" = { "256 BF16 NT" = [] } }', "configs.wgmma-tma must be a non-empty list of configuration labels"),
    ('{ "wgmma-tma" = { "256 BF16 NT" = "LABEL" } }', "configs.wgmma-tma must be a non-empty list"),
])
def test_a_bad_table_of_problems_is_refused_in_one_line(tmp_path, table, match):
    label = next(v for v in suites.load(write(tmp_path, WGMMA), "cuda").sweeps[0].variants
                 if v.name == "wgmma-tma").space.configs[0].label
    with pytest.raises(GpubenchError, match=re.escape(match)):
        suites.load(write(tmp_path, WGMMA + f"configs = {table.replace('LABEL', label)}\n"), "cuda")


def test_a_block_size_variant_is_pinned_by_its_block_sizes_not_by_a_table(tmp_path):
    """A block-size variant's configurations are the sweep's block sizes: a table of problems for it would name
    the one label its space has ('-') and run nothing, so it is refused."""
    text = '[[sweep]]\nop = "gemm"\nvariants = ["shared", "cublas"]\nsizes = [256]\nconfigs = { "shared" = { "256" = ["-"] } }\n'
    with pytest.raises(GpubenchError, match=re.escape("configs.shared takes its configurations from the sweep's "
                                                      "block_sizes")):
        suites.load(write(tmp_path, text), "cuda")


def test_a_label_repeated_for_one_problem_runs_once(tmp_path):
    label = next(v for v in suites.load(write(tmp_path, WGMMA), "cuda").sweeps[0].variants
                 if v.name == "wgmma-tma").space.configs[0].label
    text = WGMMA + f'configs = {{ "wgmma-tma" = {{ "256 BF16 NT" = ["{label}", "{label}"] }} }}\n'
    sweep = suites.load(write(tmp_path, text), "cuda").sweeps[0]
    assert [c.label for _, v, c in sweep.points() if v.name == "wgmma-tma"] == [label]


def test_a_table_of_problems_must_name_every_problem_the_variant_runs(tmp_path):
    base = WGMMA.replace("sizes = [256]", "sizes = [256, 512]")
    label = next(v for v in suites.load(write(tmp_path, base), "cuda").sweeps[0].variants
                 if v.name == "wgmma-tma").space.configs[0].label
    with pytest.raises(GpubenchError, match=re.escape("wgmma-tma names no configuration for problem '512 BF16 NT'")):
        suites.load(write(tmp_path, base + f'configs = {{ "wgmma-tma" = {{ "256 BF16 NT" = ["{label}"] }} }}\n'),
                    "cuda")


def test_a_suite_may_set_the_watchdog_and_otherwise_leaves_it_to_the_default(tmp_path):
    """A suite of kernels under development can give its points a short watchdog (a hung kernel then costs seconds,
    not the default's 300); the command line's --timeout still wins (tests/test_cli.py)."""
    assert suites.load(write(tmp_path, 'timeout = 12.5\n[[sweep]]\nop = "gemm"\nsizes = [64]')).timeout_s == 12.5
    assert suites.load(write(tmp_path, '[[sweep]]\nop = "gemm"\nsizes = [64]')).timeout_s is None
