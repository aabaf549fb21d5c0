"""A worker on a GPU is chosen among fresh processes by its launch floor (gpubench/execution/launch_floor.py)."""

import threading
from multiprocessing import Pipe

import pytest

from gpubench.core.errors import GpubenchError

from gpubench.execution import launch_floor, messages as m
from gpubench.execution.worker import Worker, WorkerOptions


def test_the_lowest_floor_is_kept_each_candidate_judged_by_its_best_turn():
    floors = [[3.45, 3.44], [3.31, 3.29], [3.47, 3.30]]  # the third's first turn was lengthened by a hiccup
    assert launch_floor.chosen(floors) == 1
    assert launch_floor.recorded(floors, 1) == [3.29, 3.44, 3.30]


def test_a_tie_keeps_the_first_opened():
    assert launch_floor.chosen([[3.3], [3.3]]) == 0


def answering(values, asked=None):
    """One end of a pipe whose other end answers each Floor request with the next of `values` (each request it
    read goes to `asked`)."""
    ours, theirs = Pipe()

    def answer():
        for v in values:
            request = theirs.recv()
            if asked is not None:
                asked.append(request)
            theirs.send(m.FloorTimed(v))

    threading.Thread(target=answer, daemon=True).start()
    return None, ours


def test_floors_that_differ_tell_the_groups_apart_and_close_ones_do_not():
    assert launch_floor.contrasted([[3.277], [3.402], [3.407]])
    assert not launch_floor.contrasted([[3.350], [3.357], [3.365]])  # all in one group: which one is unknown


def test_the_worker_asks_every_candidate_in_turns():
    floors, asked = [[3.45, 3.46], [3.42, 3.28], [3.30, 3.31]], []
    worker = Worker(WorkerOptions("cuda", candidates=3))
    assert worker._floors([answering(f, asked) for f in floors]) == floors
    assert len(asked) == 3 * launch_floor.ROUNDS and all(isinstance(r, m.Floor) for r in asked)


def test_a_backend_without_launches_has_no_floors():
    worker = Worker(WorkerOptions("cpu", candidates=2))
    assert worker._floors([answering([None]), answering([])]) is None


class Candidates:
    """Worker._spawn and _hello stood in for: each spawned candidate answers Floor with its own floors (None: it
    cannot open, refused as a GPU in exclusive-process mode refuses a second context)."""

    def __init__(self, worker, floors):
        self.floors, self.spawned, self.closed, self.reaped = iter(floors), [], [], []
        self.refused: set = set()
        worker._spawn = self.spawn
        worker._hello = self.hello
        worker.close = lambda: self.closed.append(worker.conn)
        worker._reap = lambda: self.reaped.append(worker.conn)
        self.worker = worker

    def hello(self, process, conn):
        self.worker.process, self.worker.conn = process, conn
        if conn in self.refused:
            raise GpubenchError("all CUDA-capable devices are busy or unavailable")
        return {"device": "stand-in"}

    def spawn(self):
        floors = next(self.floors)
        each = answering(floors or [])
        if floors is None:
            self.refused.add(each[1])
        self.spawned.append(each)
        return each


def test_the_fastest_candidate_is_kept_and_the_others_closed():
    worker = Worker(WorkerOptions("cuda", candidates=3))
    c = Candidates(worker, [[3.40, 3.41], [3.29, 3.28], [3.42, 3.30]])
    worker.start()
    assert len(c.spawned) == 3 and worker.conn is c.spawned[1][1]
    assert worker.floors_us == [3.28, 3.40, 3.30]
    assert c.closed == [c.spawned[0][1], c.spawned[2][1]]


def test_floors_too_close_to_tell_open_a_second_batch():
    """Three floors within CONTRAST say nothing of their group: three more open, and all six are timed again."""
    worker = Worker(WorkerOptions("cuda", candidates=3))
    close, second = [[3.35] * 2 * launch_floor.ROUNDS] * 3, [[3.26, 3.27], [3.41, 3.40], [3.36, 3.37]]
    c = Candidates(worker, close + second)
    worker.start()
    assert len(c.spawned) == 6 and worker.conn is c.spawned[3][1]
    assert worker.floors_us[0] == 3.26 and len(worker.floors_us) == 6 and len(c.closed) == 5


def test_candidates_on_the_cpu_open_and_all_but_the_kept_one_end():
    """A CPU backend has no floor: the first process is kept, the others are ended before any work."""
    spawned = []
    worker = Worker(WorkerOptions("cpu", candidates=3))
    real = worker._spawn
    worker._spawn = lambda: spawned.append(real()) or spawned[-1]
    with worker:
        info = worker.start()
        assert info and len(spawned) == 3
        assert worker.process is spawned[0][0] and worker.process.poll() is None
        assert all(p.poll() is not None for p, _ in spawned[1:])
        assert worker.environment() is not None  # the kept one serves


def test_a_candidate_that_cannot_open_is_dropped_and_the_others_chosen_from():
    worker = Worker(WorkerOptions("cuda", candidates=3))
    c = Candidates(worker, [[3.40, 3.41], None, [3.28, 3.29]])
    worker.start()
    assert worker.conn is c.spawned[2][1] and worker.floors_us == [3.28, 3.40]
    assert c.reaped == [c.spawned[1][1]] and c.closed == [c.spawned[0][1]]


def test_a_start_where_no_candidate_opens_fails_with_the_first_refusal():
    worker = Worker(WorkerOptions("cuda", candidates=2))
    c = Candidates(worker, [None, None])
    with pytest.raises(GpubenchError, match="busy or unavailable"):
        worker.start()
    assert len(c.reaped) >= 2
