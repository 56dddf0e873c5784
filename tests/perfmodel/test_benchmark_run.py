"""The finite closed-loop run of a benchmark client over a disaggregated deployment
(perfmodel.benchmark_run); its use as the rate reading of disaggregated rows is tested
with the rest of that reading (tests/perfmodel/test_validation_disagg.py)."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.benchmark_run import (
    RANGE_RATIO,
    Routing,
    _Router,
    closed_loop_run,
    output_lengths,
)


def test_output_lengths_span_the_clients_range_around_the_posed_mean():
    o = output_lengths(921.5, 20000)
    top = 921.5 / (0.5 * (1 + RANGE_RATIO))
    assert o.min() >= np.floor(RANGE_RATIO * top) and o.max() <= np.ceil(top)
    assert o.mean() == pytest.approx(921.5, rel=0.01)
    assert np.array_equal(o, output_lengths(921.5, 20000))  # seeded: the same draw


def test_one_client_runs_its_requests_back_to_back():
    """One client, one group each side, constant station times: every request takes
    its pass, the transfer and o - 1 steps, and the run is their sum."""
    n, t_p, t_kv, t_d = 7, 0.25, 0.01, 0.02
    run = closed_loop_run(1, np.array([t_p]), t_kv, 1, np.array([t_d]), 1, n, 100.0)
    o = output_lengths(100.0, n)
    wall = float(np.sum(t_p + t_kv + (o - 1) * t_d))
    assert run.wall_s == pytest.approx(wall, rel=1e-9)
    assert run.output_tokens_per_s == pytest.approx(o.sum() / wall, rel=1e-9)
    assert run.mean_ttft_s == pytest.approx(t_p + t_kv)


def test_a_burst_queues_behind_the_prefill_and_the_decode_batch_cap():
    """Four prompts at once on a group that prefills one per pass: the k-th waits k
    passes; a decode group of one slot serialises their decodes."""
    run = closed_loop_run(1, np.array([1.0]), 0.0, 1, np.array([0.001]), 4, 4, 10.0)
    assert run.mean_ttft_s == pytest.approx((1 + 2 + 3 + 4) / 4)
    wide = closed_loop_run(1, np.array([1.0, 1.2, 1.4, 1.6]), 0.0, 1,
                           np.array([0.001] * 4), 4, 4, 10.0)
    assert wide.mean_ttft_s == pytest.approx(1.6)  # one pass takes all four
    one_slot = closed_loop_run(1, np.array([1.0, 1.2, 1.4, 1.6]), 0.0, 1,
                               np.array([0.5]), 4, 4, 10.0)
    four_slots = closed_loop_run(1, np.array([1.0, 1.2, 1.4, 1.6]), 0.0, 1,
                                 np.array([0.5] * 4), 4, 4, 10.0)
    assert one_slot.wall_s > 3.5 * (four_slots.wall_s - 1.6)


def test_a_run_needs_both_sides_and_a_client():
    with pytest.raises(ValueError, match="routing needs workers"):
        closed_loop_run(0, np.array([1.0]), 0.0, 1, np.array([0.1]), 1, 1, 10.0)
    with pytest.raises(ValueError, match="needs a client"):
        closed_loop_run(1, np.array([1.0]), 0.0, 1, np.array([0.1]), 0, 1, 10.0)
    with pytest.raises(ValueError, match="routing needs"):
        Routing(2, 4, "random")


def test_the_frontend_deals_workers_in_turn_and_a_worker_applies_its_rule():
    """Two workers of two groups each: the frontend alternates workers whatever the
    loads; round robin within a worker then cycles its groups, least loaded takes its
    emptier group; pooled takes the emptiest group of the side."""
    load = [5, 0, 0, 3]
    rr = _Router(Routing(2, 2, "round_robin"))
    assert [rr.pick(load) for _ in range(5)] == [0, 2, 1, 3, 0]
    ll = _Router(Routing(2, 2, "least_loaded"))
    assert [ll.pick(load) for _ in range(3)] == [1, 2, 1]
    pooled = _Router(Routing.pooled_groups(4))
    assert pooled.pick(load) == 1 and Routing.pooled_groups(4).groups == 4
    across = _Router(Routing(2, 2, "round_robin", pooled=True))
    assert [across.pick(load) for _ in range(2)] == [1, 1]  # the side's emptiest, always


def test_an_int_side_is_the_pooled_routing_and_the_rule_changes_the_run():
    """A group count routes as :meth:`Routing.pooled_groups`; on two one-prompt-per-pass groups
    fed three clients, dealing in turn and joining the least loaded give different runs
    (the least-loaded rule breaks ties to the first group, so it is not the better of
    the two in every run), each the same on every call."""
    args = (np.array([1.0]), 0.0, 1, np.array([0.01]), 3, 30, 10.0)
    pooled = closed_loop_run(Routing.pooled_groups(2), *args)
    assert pooled == closed_loop_run(2, *args)
    turn = closed_loop_run(Routing(1, 2, "round_robin"), *args)
    assert turn != pooled and turn == closed_loop_run(Routing(1, 2, "round_robin"), *args)


def test_a_workers_prefill_groups_pass_together_for_as_long_as_the_fullest():
    """Three prompts dealt in turn to one worker's two groups (two, then one): in
    lockstep one pass of two prompts' length carries all three; groups running alone
    finish the lone prompt in a one-prompt pass."""
    args = (np.array([1.0, 3.0]), 0.0, 1, np.array([0.001]), 3, 3, 10.0)
    together = closed_loop_run(Routing(1, 2, "round_robin"), *args)
    alone = closed_loop_run(Routing(1, 2, "round_robin", lockstep=False), *args)
    assert together.mean_ttft_s == pytest.approx(3.0)
    assert alone.mean_ttft_s == pytest.approx((3.0 + 3.0 + 1.0) / 3)


def test_a_workers_decode_groups_step_at_the_fullest_groups_pace():
    """Decode dealt in turn over one worker's two groups, one of them holding two
    sequences: in lockstep the other group steps at the two-sequence pace too, so the
    run is longer; with a step time that does not depend on the batch, lockstep changes
    nothing."""
    def run(step_s, lockstep):
        return closed_loop_run(1, np.array([1e-6] * 4), 0.0,
                               Routing(1, 2, "round_robin", lockstep=lockstep),
                               np.array(step_s), 3, 4, 50.0)
    assert run([0.01, 0.03], True).wall_s > run([0.01, 0.03], False).wall_s
    flat_together, flat_alone = run([0.02, 0.02], True), run([0.02, 0.02], False)
    assert flat_together.wall_s == pytest.approx(flat_alone.wall_s, rel=1e-12)
    assert flat_together.mean_ttft_s == pytest.approx(flat_alone.mean_ttft_s, rel=1e-12)
