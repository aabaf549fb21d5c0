"""The check that keeps a Python variant's work on the timed stream, without a GPU: events that saw the call are
believed, events that missed most of what the device did are not, and one host hiccup decides nothing."""

from gpubench.backends.cuda.python_calls import events_missed


def test_events_that_saw_the_work_pass():
    assert events_missed([(5.01, 5.04), (5.00, 5.03), (5.02, 5.05)]) is None  # a 5 ms kernel on the timed stream
    assert events_missed([(0.004, 0.030)] * 3) is None  # a tiny call: the host's launch and sync, not missed work


def test_events_that_missed_the_work_are_caught():
    assert events_missed([(0.02, 5.03), (0.03, 5.05), (0.02, 5.02)]) == (0.02, 5.02)  # a 5 ms spin on a side stream
    assert events_missed([(0.30, 1.0)] * 3) == (0.30, 1.0)  # 0.7 of 1 ms unseen


def test_one_host_hiccup_decides_nothing():
    assert events_missed([(1.0, 9.0), (1.0, 1.02), (1.0, 1.03)]) is None

