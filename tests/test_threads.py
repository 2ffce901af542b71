"""attnscope.threads: lanes run each call on one thread, in the caller's grad mode, results in the
items' order, and leave the process's thread count as it was; a forked child starts its own."""

import threading

import pytest
import torch

import attnscope.threads as threads


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def needs_openmp():
    # the pinned CPU wheels run their threads on OpenMP; a build without it has no lanes (lane_pool
    # returns None and every path above runs in the caller, as the test below checks)
    assert "OpenMP" in torch.__config__.parallel_info()


def test_map_lanes_runs_each_call_on_one_thread_in_order(two_threads):
    needs_openmp()
    seen = []

    def fn(i: int) -> tuple[int, int, str, bool]:
        seen.append(i)
        return i * i, torch.get_num_threads(), threading.current_thread().name, torch.is_grad_enabled()

    with torch.no_grad():
        out = threads.map_lanes(fn, range(7))
    assert [o[0] for o in out] == [i * i for i in range(7)]
    assert {o[1] for o in out} == {1}
    assert all(o[2].startswith(threads.LANE_PREFIX) for o in out)
    assert {o[3] for o in out} == {False}
    assert sorted(seen) == list(range(7))
    assert torch.get_num_threads() == 2  # the caller's setting survives the workers' own
    assert {o[3] for o in threads.map_lanes(fn, range(3))} == {True}  # grad mode follows the caller


def test_map_lanes_stays_in_the_caller_where_lanes_cannot_help(two_threads):
    me = threading.current_thread().name
    name = lambda i: threading.current_thread().name  # noqa: E731
    assert threads.map_lanes(name, [0]) == [me]  # one item
    assert threads.map_lanes(name, [0, 1], device="meta") == [me, me]  # not a CPU
    torch.set_num_threads(1)
    assert threads.map_lanes(name, [0, 1]) == [me, me]  # one thread


def test_a_lane_does_not_hand_work_to_the_lanes(two_threads):
    needs_openmp()
    inner = threads.map_lanes(lambda i: threads.map_lanes(lambda k: threading.current_thread().name, [0, 1]), [0, 1])
    for names in inner:  # each lane ran its own items itself (waiting on the pool from it could deadlock)
        assert len(set(names)) == 1 and names[0].startswith(threads.LANE_PREFIX)


def test_an_error_in_a_call_reaches_the_caller(two_threads):
    def fn(i):
        if i == 3:
            raise ValueError("item 3")
        return i
    with pytest.raises(ValueError, match="item 3"):
        threads.map_lanes(fn, range(5))


def test_a_forked_child_does_not_reuse_the_parents_workers(monkeypatch, two_threads):
    """After fork the child has the parent's pool objects but not their threads; a changed pid
    makes it start its own (simulated: a real fork after OpenMP ran hangs inside libgomp itself,
    plain matmuls included, before attnscope is involved)."""
    needs_openmp()
    first = threads.lane_pool(2)
    assert threads.lane_pool(2) is first
    monkeypatch.setattr(threads, "POOL_PID", -1)
    second = threads.lane_pool(2)
    assert second is not first and threads.POOL_PID > 0
    assert torch.get_num_threads() == 2
    assert threads.lane_pool(1) is None
