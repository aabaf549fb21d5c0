"""cuDNN's plan search (gpubench/backends/cuda/libraries.py), on a scripted clock: which plan wins, and which
plans are left out after one timed call. The search on real plans runs in tests/test_gpu.py."""

from types import SimpleNamespace

from gpubench.backends.cuda.libraries import CONTEND, ROUNDS, SCREEN_MS, Libraries, contenders, pick_plan


class Clock:
    """Each call of a plan takes that plan's scripted time; counts every call per plan."""

    def __init__(self, graph):
        self.graph = graph

    def sync(self):
        pass

    def flush(self):
        pass

    def time_ms(self, run):
        run()
        ms = self.graph.ms[self.graph.last]
        return ms(self.graph.calls[self.graph.last]) if callable(ms) else ms


class Graph:
    def __init__(self, ms):
        self.ms = ms
        self.plans = [SimpleNamespace(index=i) for i in range(len(ms))]
        self.calls = [0] * len(ms)
        self.last = None

    def run(self, plan, x, w, out):
        self.last = plan.index
        self.calls[plan.index] += 1

    def release_workspaces(self):
        pass


def search(ms):
    graph = Graph(ms)
    backend = SimpleNamespace(clock=Clock(graph), cp=SimpleNamespace(
        cuda=SimpleNamespace(memory=SimpleNamespace(OutOfMemoryError=MemoryError))))
    backend._screened_out = lambda run, fastest: Libraries._screened_out(backend, run, fastest)
    backend._settled = lambda *args: Libraries._settled(backend, *args)
    return Libraries._fastest_plan(backend, graph, None, None, None), graph


def test_plans_far_slower_than_the_fastest_so_far_get_two_calls_not_a_full_timing():
    plan, graph = search([5.0, 20.0, 5.1, 7.0])
    assert plan.index == 0  # 5.1 ms ties with 5.0 (within 3%): cuDNN's ranking settles it
    assert graph.calls[1] == 2 and graph.calls[0] > 2 and graph.calls[2] > 2  # 20 ms: one untimed, one timed
    assert graph.calls[3] > 2  # 7 ms is under 1.5 times the fastest: timed in full


def test_a_faster_plan_found_later_still_wins_and_short_plans_are_never_screened():
    plan, graph = search([8.0, 2.0, 30.0])
    assert plan.index == 1 and graph.calls[2] == 2
    plan, graph = search([0.01, SCREEN_MS / 2])
    assert plan.index == 0 and graph.calls[1] > 2  # half a millisecond: cheap to time in full


def plan(i):
    return SimpleNamespace(index=i)


def test_on_a_short_layer_the_plans_near_the_fastest_are_timed_again_and_on_a_long_one_not():
    timed = [(0.0070, plan(0)), (0.0079, plan(1)), (0.0070 * (1 + CONTEND) + 1e-6, plan(2))]
    assert [p.index for _, p in contenders(timed)] == [0, 1]
    assert contenders([(SCREEN_MS, plan(0)), (SCREEN_MS * 1.01, plan(1))]) == []
    assert pick_plan([(0.0080, plan(3)), (0.0079, plan(5)), (0.0090, plan(1))]).index == 3  # a tie: cuDNN's rank


def test_a_plan_that_read_slow_once_is_judged_on_its_later_rounds():
    """Plan 0 runs at 7.0 µs but its first timing read 8.5 (what once made two runs pick engines 12% apart):
    timed again in interleaved rounds it wins over plan 1 at 7.9 µs."""
    first = 21  # the search's first timing of a plan: one warm-up call and 20 samples
    chosen, graph = search([lambda n: 0.0085 if n <= first else 0.0070, 0.0079, 0.02])
    assert chosen.index == 0
    screen = 2  # a later plan's screening calls (one untimed, one timed)
    assert graph.calls[0] == graph.calls[1] - screen == first * (1 + ROUNDS)
    assert graph.calls[2] == screen + first  # 0.02 ms is no contender: timed once
