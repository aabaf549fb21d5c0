"""The README's exit-code table is the one in gpubench/core/exit_codes.py, row for row."""

import re
from pathlib import Path

from gpubench.core.exit_codes import MEANING, Exit

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_table_matches_the_code():
    text = README.read_text()
    section = text[text.index("### Exit codes"):text.index("## Benchmark your own kernel")]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M))
    assert rows == {str(int(code)): MEANING[code] for code in Exit}


def test_every_code_has_a_meaning():
    assert set(MEANING) == set(Exit)
