"""The layering contract (pyproject.toml's [tool.importlinter]): execution never imports use cases or views, the
model never imports views or the plan, use cases never reach a backend but through an executor, views never run
anything. import-linter checks every import statement of the package, function-level ones included."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def lint_imports(config: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run([exe, "--config", str(config), "--no-cache"], cwd=REPO, capture_output=True, text=True)


def test_the_package_keeps_its_layers():
    r = lint_imports(REPO / "pyproject.toml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "broken" in r.stdout and "0 broken" in r.stdout


def test_a_broken_layer_is_reported(tmp_path):
    """The check can fail: a contract the package breaks (the command line imports the use cases) is reported."""
    config = tmp_path / "contracts.toml"
    config.write_text('[tool.importlinter]\nroot_package = "gpubench"\n\n[[tool.importlinter.contracts]]\n'
                      'name = "the CLI may not use the use cases"\ntype = "forbidden"\n'
                      'source_modules = ["gpubench.cli"]\nforbidden_modules = ["gpubench.usecases.commands"]\n')
    r = lint_imports(config)
    assert r.returncode != 0 and "BROKEN" in r.stdout and "gpubench.cli -> gpubench.usecases.commands" in r.stdout
