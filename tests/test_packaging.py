"""A wheel built from the repository works on its own: installed into a fresh virtual environment and run from a
directory outside the repository, it finds its kernels and suites and runs a project's own variants."""

import fcntl
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import shared_dir
from gpubench.execution import nvcc

REPO = Path(__file__).resolve().parent.parent


# The tests share one built and installed wheel: on one xdist worker (--dist loadgroup), and built once per session
# whatever the distribution (a lock in the session's shared directory: a second worker waits for the first's venv).
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """`python -m build` run on a copy of the checkout, once: the folder holding dist/ and venv/, and what the build
    printed."""
    root = shared_dir(tmp_path_factory) / "wheel"
    root.mkdir(exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (root / "installed").is_file():
            build_and_install(root, root / "venv" / "bin")
            (root / "installed").write_text("ok")
    return root, (root / "build.log").read_text()


@pytest.fixture(scope="session")
def installed(built):
    """The wheel `python -m build` makes, pip-installed (not editable) into a new venv; its bin directory."""
    return built[0] / "venv" / "bin"


def build_and_install(root: Path, bin_dir: Path) -> None:
    src = root / "src"  # a copy, so the build leaves nothing behind in the checkout
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", ".ci-venv", "build", "dist", "*.egg-info",
                                                             "__pycache__", ".pytest_cache", ".devwheels", ".stage", ".whl",
                                                             ".cuptiwheels", ".oldsrc", "site"))
    # The release's own command (an sdist, then the wheel built from it), in an environment that does not disable
    # byte-compiling (PYTHONDONTWRITEBYTECODE makes setuptools warn that it skips it, whatever the project says).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    build = subprocess.run([sys.executable, "-m", "build", "--outdir", str(root / "dist"), str(src)], env=env,
                           capture_output=True, text=True)
    (root / "build.log").write_text(build.stdout + build.stderr)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (root / "dist").glob("gpubench-*.whl")
    venv.create(root / "venv", with_pip=True)
    subprocess.run([bin_dir / "python", "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True,
                   env=own_environment())  # a PYTHONPATH naming the checkout made pip see gpubench installed


def gpubench(bin_dir, cwd, *args, timeout=300):
    env = own_environment()
    env["XDG_CACHE_HOME"] = str(cwd / ".cache")
    return subprocess.run([bin_dir / "gpubench", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def own_environment() -> dict:
    """This process's environment without what would make the venv's Python import anything but its own copy (a
    PYTHONPATH naming a checkout shadows the installed wheel) or read gpubench's settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("GPUBENCH_", "PYTHON", "VIRTUAL_ENV"))}


def test_the_wheel_carries_kernels_suites_and_specs(installed, tmp_path):
    site = subprocess.run([installed / "python", "-c", "import gpubench, os; print(os.path.dirname(gpubench.__file__))"],
                          capture_output=True, text=True, check=True, cwd=tmp_path, env=own_environment()).stdout.strip()
    assert REPO not in Path(site).parents  # the installed copy, not the checkout
    # Every file of the top-level cuda_src/ and configs/ travels, under the same relative path inside the package.
    for folder in ("cuda_src", "configs"):
        shipped = {p.relative_to(REPO / folder) for p in (REPO / folder).rglob("*") if p.is_file()}
        assert shipped, folder
        for rel in shipped:
            assert (Path(site) / folder / rel).is_file(), f"{folder}/{rel}"


def test_list_and_quick_run_from_anywhere(installed, tmp_path):
    r = gpubench(installed, tmp_path, "list")
    assert r.returncode == 0, r.stderr
    for word in ("tiled", "cudnn", "quick", "lab", "resnet"):
        assert word in r.stdout
    r = gpubench(installed, tmp_path, "run", "quick", "--backend", "cpu", "-o", "q.json")
    assert r.returncode == 0, r.stderr
    assert "saved" in r.stderr and (tmp_path / "q.json").is_file()
    assert not list((tmp_path / ".cache").glob("**/*.cubin"))  # nothing compiled on the CPU backend


def test_a_project_outside_the_repository(installed, tmp_path):
    project = tmp_path / "my-lab"
    shutil.copytree(REPO / "examples" / "lab", project)
    (project / "cpu.py").write_text("import numpy as np\ndef mm(a, b, c, m, n, k):\n    np.matmul(a, b, out=c)\n")
    with open(project / "gpubench.toml", "a") as f:
        f.write('\n[[variant]]\nname = "lab-numpy"\nop = "gemm"\nsource = "cpu.py"\nkernel = "mm"\n'
                'args = ["a", "b", "c", "m", "n", "k"]\n')
    r = gpubench(installed, project, "list")
    assert r.returncode == 0 and "lab-shared" in r.stdout and "lab-conv" in r.stdout, r.stderr
    r = gpubench(installed, project, "gemm", "--backend", "cpu", "--mnk", "50,40,30", "-o", "r.json")
    assert r.returncode == 0, r.stderr
    if nvcc.find_nvcc():
        r = gpubench(installed, project, "check", "--arch", "sm_90", "--block-sizes", "16")
        assert r.returncode == 0 and "builds compiled" in r.stdout, r.stdout + r.stderr
        (project / "matmul_lab.cu").write_text((project / "matmul_lab.cu").read_text().replace("sum +=", "sum +=;"))
        r = gpubench(installed, project, "check", "--arch", "sm_90", "--block-sizes", "16")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "matmul_lab.cu" in r.stderr, r.stderr


def test_the_example_run_is_shown_from_anywhere(installed, tmp_path):
    """The README's `gpubench show results/...` worked only inside a checkout: the wheel carries one saved run."""
    r = gpubench(installed, tmp_path, "show", "--example")
    assert r.returncode == 0 and "NVIDIA H200, 352 points, complete" in r.stdout and "gemm · tiled" in r.stdout, \
        r.stdout + r.stderr
    first = r.stdout.split(":")[0]
    assert REPO not in Path(first).parents and "site-packages" in first  # the installed copy


def test_the_wheel_registers_the_pytest_plugin(installed, tmp_path):
    code = ("from importlib.metadata import entry_points; "
            "print([e.value for e in entry_points(group='pytest11') if e.name == 'gpubench'])")
    out = subprocess.run([installed / "python", "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env=own_environment())
    assert out.stdout.strip() == "['gpubench.pytest_plugin']"


def test_the_build_prints_no_warning(built):
    """`python -m build` is warning-free: e.g. every folder of kernels or assets the wheel carries is a listed package
    (setuptools otherwise prints a "Package would be ignored" block for each one)."""
    _, output = built
    warnings = [line for line in output.splitlines() if "warning" in line.lower()]
    assert not warnings, "\n".join(warnings)
