"""The README and the documentation site: a README a newcomer can read (at most 250 lines), no page that speaks of
the sessions or issues the work came from, every saved run and log a page cites present (under results/ and
docs/evidence/), and a site that MkDocs builds with --strict (every link, nav entry, included file and the generated
command-line reference checked), offline."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 250

# Pages a reader meets: the README, the site's pages (docs/evidence/ holds raw logs, not pages), the files the site
# includes, and the repository's other guides.
PAGES = sorted({README, ROOT / "CHANGELOG.md", ROOT / "DEVELOPERS.md", ROOT / "cuda_src" / "README.md",
                *(p for p in (ROOT / "docs").rglob("*.md") if "evidence" not in p.relative_to(ROOT / "docs").parts)})

# "session 33", "Session 31's", "issue 20", "issues 39", "issue #23", "issue20", and the bare session tags (s31, s32)
# the old notes used.
PROVENANCE = re.compile(r"\b(?:session|issue)s? ?#?\d+|\bs\d\d\b", re.IGNORECASE)
# A saved run's or a log's file name is a name, not prose: some carry the tag of the round that made them.
FILE_NAME = re.compile(r"[\w.<>*…/-]*\.(?:json(?:\.gz)?|md|txt|toml|py|cuh?|html|png)\b")
# a run under results/; one named after a revision (`git show 6e09672:results/...`) is history, not a cite of the tree
CITED_RUN = re.compile(r"(?<![\w:])results/([\w<>.-]+)/([\w.-]+\.json(?:\.gz)?)")
CITED_TOOL = re.compile(r"\btools/[\w/.-]+\.(?:py|sh|toml|cu)\b")
CITED_EVIDENCE = re.compile(r"docs/evidence/([\w.*-]*\w)")  # a name, or a pattern: phases-lab-*.txt


def provenance_mentions(text: str) -> list[str]:
    return [m.group(0) for m in PROVENANCE.finditer(FILE_NAME.sub(" ", text))]


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; at most {README_MAX_LINES} (move detail to docs/)"


def test_the_readme_names_both_commands():
    text = README.read_text(encoding="utf-8")
    assert "gpubench run lab" in text and "python3 -m pytest" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_mentions_a_session_or_an_issue(page):
    found = provenance_mentions(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(ROOT)} mentions {sorted(set(found))}: say what was done, not when"


def test_the_check_finds_what_it_looks_for():
    assert provenance_mentions("as issue 20 asked, after Session 33; s32's run; issue #7; issues 4")
    assert provenance_mentions("issue20 met")
    assert not provenance_mentions("`results/nvidia-h200/tc-conv-issue20-s33-r1.json.gz`, 192x128 s4 c1 g16")


def test_a_run_named_after_a_revision_is_not_a_cite_of_the_tree():
    cites = [m.groups() for m in CITED_RUN.finditer(
        "`results/nvidia-h200/lab.json.gz` and `git show 6e09672:results/nvidia-h200/gone.json.gz`")]
    assert cites == [("nvidia-h200", "lab.json.gz")]


def test_a_missing_run_is_missing():
    assert not _present("nvidia-h200", "no-such-run.json.gz") and not _present("<gpu>", "no-such-run.json")


def _present(gpu: str, name: str) -> bool:
    dirs = [d for d in (ROOT / "results").iterdir() if d.is_dir()] if gpu == "<gpu>" else [ROOT / "results" / gpu]
    stem = name.removesuffix(".gz")
    return any((d / stem).exists() or (d / f"{stem}.gz").exists() for d in dirs)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_saved_run_a_page_cites_is_there(page):
    missing = sorted({m.group(0) for m in CITED_RUN.finditer(page.read_text(encoding="utf-8"))
                      if not _present(*m.groups())})
    assert not missing, f"{page.relative_to(ROOT)} cites runs that are not under results/: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_log_a_page_cites_is_there(page):
    missing = sorted({m.group(0) for m in CITED_EVIDENCE.finditer(page.read_text(encoding="utf-8"))
                      if not any((ROOT / "docs" / "evidence").glob(m.group(1)))})
    assert not missing, f"{page.relative_to(ROOT)} cites evidence that is not under docs/evidence/: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_tool_a_page_cites_is_there(page):
    missing = sorted({m.group(0) for m in CITED_TOOL.finditer(page.read_text(encoding="utf-8"))
                      if not (ROOT / m.group(0)).exists()})
    assert not missing, f"{page.relative_to(ROOT)} cites tools that are not in the repository: {missing}"


def test_the_readmes_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    assert targets, "the README links to the documentation"
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_site_builds_strictly_offline(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed (pip install -e '.[docs]')")
    pytest.importorskip("mkdocs_click", reason="mkdocs-click is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "NO_MKDOCS_2_WARNING": "1"}
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
             "-d", str(tmp_path / "site")]
    done = subprocess.run(build, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8").count("gpubench gemm")


# The code's own words: "issue 20" or "session 33" in a comment, a docstring or a tool's description (cuda_src is
# left out: "the LSU issues 8 stores" is a verb; file names and the suite names they come from, such as
# "tc-conv-issue20", are names, as on the pages).
CODE_PROVENANCE = re.compile(r"\b(?:session|issue) #?\d+", re.IGNORECASE)
CODE_PATTERNS = ("gpubench/**/*.py", "tests/**/*.py", "tools/**/*.py", "tools/**/*.sh", "tools/**/*.toml",
                 "configs/**/*.toml")
CODE = sorted(p for pattern in CODE_PATTERNS for p in ROOT.glob(pattern) if p.name != "test_docs.py")


@pytest.mark.parametrize("path", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_mentions_a_session_or_an_issue(path):
    found = [m.group(0) for m in CODE_PROVENANCE.finditer(FILE_NAME.sub(" ", path.read_text(encoding="utf-8")))]
    assert not found, f"{path.relative_to(ROOT)} mentions {sorted(set(found))}: say what was done, not when"


def test_the_code_check_reads_numbers_not_names():
    assert CODE_PROVENANCE.search("# --- issue 23: what a user met") and CODE_PROVENANCE.search("Session 31's run")
    assert CODE_PROVENANCE.search("as issue #7 asked")
    assert not CODE_PROVENANCE.search(FILE_NAME.sub(" ", 'io.load(RESULTS / "tc-conv-issue20-s33-r1.json.gz")'))
    assert not CODE_PROVENANCE.search('name = "tc-conv-issue20"')
