"""What `gpubench run` says on its last lines (gpubench/views/terminal.py)."""

from gpubench.views.terminal import chosen_line


def test_the_chosen_worker_is_named_by_its_floor_among_the_candidates():
    line = chosen_line([3.247, 3.264, 3.342])
    assert line.startswith("timed in the process whose empty launch cost least: 3.247 µs, of 3 opened")
    assert "(the others 3.264, 3.342 µs)" in line
