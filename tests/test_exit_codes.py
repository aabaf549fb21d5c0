"""The exit-code table of the documentation (docs/reference/exit-codes.md) is the one in gpubench/core/exit_codes.py,
row for row."""

import re
from pathlib import Path

from gpubench.core.exit_codes import MEANING, Exit

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "exit-codes.md"


def test_the_documented_table_matches_the_code():
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", PAGE.read_text(encoding="utf-8"), re.M))
    assert rows == {str(int(code)): MEANING[code] for code in Exit}


def test_every_code_has_a_meaning():
    assert set(MEANING) == set(Exit)
