"""Every suite under tools/gpu/ (and the rounds' suites under tools/gpu/rounds/) loads for the CUDA backend against
the built-in catalog: its variants, precisions, layouts and configuration labels (pinned ones included) exist.
These suites run only on a lent GPU, where a typo in a label would cost a whole call; here it costs a failed
test."""

from pathlib import Path

import pytest

from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError
from gpubench.planning import suites

TOOLS_GPU = Path(__file__).resolve().parent.parent / "tools" / "gpu"
GPU_SUITES = sorted([*TOOLS_GPU.glob("*.toml"), *TOOLS_GPU.glob("rounds/*.toml")])  # the rounds' suites run again


@pytest.mark.parametrize("path", GPU_SUITES, ids=[p.relative_to(TOOLS_GPU).as_posix() for p in GPU_SUITES])
def test_each_gpu_suite_loads_with_every_point_known(path):
    suite = suites.load(path, backend=BackendKind.CUDA)
    assert sum(len(list(sweep.points())) for sweep in suite.sweeps) > 0


def test_a_configuration_label_the_catalog_lacks_is_refused(tmp_path):
    text = (TOOLS_GPU / "grouped-bf16-bands.toml").read_text()
    assert "c1 g16 u1" in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("c1 g16 u1", "c1 g17 u1"))
    with pytest.raises(GpubenchError, match="has no configuration '128x256 s4 c1 g17"):
        suites.load(bad, backend=BackendKind.CUDA)
