import pytest

from gpubench.errors import GpubenchError


@pytest.fixture(scope="session")
def cuda():
    """The CUDA backend, or a skip where this machine has no GPU stack (tests using it carry the gpu marker)."""
    from gpubench.backends import open_backend

    try:
        return open_backend("cuda")
    except GpubenchError as e:
        pytest.skip(f"no GPU here: {e}")


@pytest.fixture
def cpu():
    from gpubench.backends.cpu import CpuBackend

    return CpuBackend()
