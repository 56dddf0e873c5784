"""Flow-level network: seed 003 §4.1's validation checks plus the engine contract."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.fleet.network import SEED003_NETWORK, Location, NetworkSpec, Tier
from planner.sim.netflow import Background, FlowNetwork, waterfill

# islands 0,1 on node 0 (tier 0); 2 on node 1 (same rack: tier 1 from 0); 3 on rack 1
# (same pod: tier 2); 4, 5 in pod 1 (tier 3)
LOCS = [Location(0, 0, 0), Location(0, 0, 0), Location(0, 0, 1), Location(0, 1, 2),
        Location(1, 2, 4), Location(1, 3, 6)]
GB = 1e9


def drain(net: FlowNetwork) -> dict[int, float]:
    """Run the network to empty the way the engine does; key -> completion time."""
    out = {}
    while (t := net.next_finish()) < math.inf:
        for key in net.pop_finished(t):
            out[key] = t
    return out


@pytest.mark.parametrize("dst,tier", [(1, 0), (2, 1), (3, 2), (4, 3)])
def test_single_flow_gets_tier_bandwidth(dst, tier):
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    assert net.tier_of(0, dst) == tier
    t = SEED003_NETWORK.tiers[tier]
    net.start(1.0, 7, 0, dst, 2 * GB, 4)
    assert net.rate_of(7) == pytest.approx(t.bandwidth_bytes_s, rel=1e-3)
    done = drain(net)
    expect = 1.0 + t.latency_s + 2 * GB / t.bandwidth_bytes_s
    assert done[7] == pytest.approx(expect, rel=1e-3)
    # latency paid once per transfer, not once per flow
    assert done[7] - 1.0 - 2 * GB / t.bandwidth_bytes_s == pytest.approx(t.latency_s, rel=1e-6)
    assert net.transfer_time_estimate(0, dst, 2 * GB) == pytest.approx(expect - 1.0, rel=1e-9)


def test_n_flows_share_a_bottleneck_equally():
    b3 = SEED003_NETWORK.tiers[3].bandwidth_bytes_s
    for n in (2, 3, 5):
        net = FlowNetwork(SEED003_NETWORK, LOCS)
        for key in range(n):  # all from island 0 at tier 3: they share island 0's slices
            net.start(0.0, key, 0, 4 + key % 2, GB, 4)
        for key in range(n):
            assert net.rate_of(key) == pytest.approx(b3 / n, rel=1e-9)
        done = drain(net)
        assert max(done.values()) == pytest.approx(n * GB / b3, rel=1e-4)


def test_completion_reallocates_to_the_others():
    b1 = SEED003_NETWORK.tiers[1].bandwidth_bytes_s
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(0.0, 1, 0, 2, 1 * GB, 4)  # small
    net.start(0.0, 2, 0, 2, 3 * GB, 4)  # large
    assert net.rate_of(2) == pytest.approx(b1 / 2)
    t1 = net.next_finish()
    assert t1 == pytest.approx(2 * GB / b1, rel=1e-4)  # 1 GB at half rate
    assert net.pop_finished(t1) == [1]
    assert net.rate_of(2) == pytest.approx(b1, rel=1e-9)  # speeds up at once
    t2 = net.next_finish()
    # 1 GB moved at b1/2, the remaining 2 GB at b1
    assert t2 == pytest.approx(t1 + 2 * GB / b1, rel=1e-4)
    assert net.pop_finished(t2) == [2]
    assert net.next_finish() == math.inf and len(net) == 0


def test_pop_before_finish_returns_nothing_and_keeps_state():
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(0.0, 1, 0, 3, GB, 4)
    f = net.next_finish()
    assert net.pop_finished(f * 0.5) == []
    assert net.next_finish() == f
    assert net.pop_finished(f) == [1]


def test_late_start_sees_lazily_advanced_bytes():
    b1 = SEED003_NETWORK.tiers[1].bandwidth_bytes_s
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(0.0, 1, 0, 2, 2 * GB, 4)
    half = 1 * GB / b1  # half of transfer 1 is done by now
    net.start(half, 2, 0, 2, 2 * GB, 4)
    done = drain(net)
    # 1 GB left of #1 at b1/2 -> ends at half + 2 GB/b1; then #2 has 1 GB left at b1
    assert done[1] == pytest.approx(half + 2 * GB / b1, rel=1e-4)
    assert done[2] == pytest.approx(done[1] + 1 * GB / b1, rel=1e-4)


def test_max_min_not_just_equal_split():
    """A narrow cross-pod transfer keeps its B3; a rack transfer on the same NIC gets the
    rest of B1 (max-min, not 1/N)."""
    b1, b3 = (SEED003_NETWORK.tiers[k].bandwidth_bytes_s for k in (1, 3))
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(0.0, 1, 0, 4, GB, 4)  # tier 3
    net.start(0.0, 2, 0, 2, GB, 4)  # tier 1, same source NIC
    assert net.rate_of(1) == pytest.approx(b3)
    assert net.rate_of(2) == pytest.approx(b1 - b3)


def test_destination_contention():
    b2 = SEED003_NETWORK.tiers[2].bandwidth_bytes_s
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(0.0, 1, 0, 3, GB, 4)
    net.start(0.0, 2, 2, 3, GB, 4)  # different source, same destination island
    assert net.rate_of(1) == pytest.approx(b2 / 2)
    assert net.rate_of(2) == pytest.approx(b2 / 2)


def test_groups_spread_transfers_and_weight_shards():
    b3 = SEED003_NETWORK.tiers[3].bandwidth_bytes_s
    # island 0: 8 GPUs in two TP-4 groups; island 4: one TP-2 group; island 5: one TP-8
    gpus, tp = [8, 8, 8, 8, 2, 8], [4, 8, 8, 8, 2, 8]
    net = FlowNetwork(SEED003_NETWORK, LOCS, gpus=gpus, group_gpus=tp)
    net.start(0.0, 1, 0, 5, GB, 4)
    net.start(0.0, 2, 0, 5, GB, 4)
    # the two transfers leave from different source groups, and island 5 spreads each
    # 4-shard cache over its 8 NICs (half a flow per GPU): no contention anywhere
    assert net.rate_of(1) == pytest.approx(b3) and net.rate_of(2) == pytest.approx(b3)
    net.start(0.0, 3, 0, 5, GB, 4)  # a third one shares a source group with one of them
    assert sorted(net.rate_of(k) for k in (1, 2, 3)) == pytest.approx([b3 / 2, b3 / 2, b3])
    net2 = FlowNetwork(SEED003_NETWORK, LOCS, gpus=gpus, group_gpus=tp)
    net2.start(0.0, 4, 0, 4, GB, 4)  # 4 shards onto 2 GPUs: 2 flows per GPU
    assert net2.rate_of(4) == pytest.approx(b3 / 2)
    without = FlowNetwork(SEED003_NETWORK, LOCS)  # no sizes: each island one group
    without.start(0.0, 1, 0, 5, GB, 4)
    without.start(0.0, 2, 0, 5, GB, 4)
    assert without.rate_of(1) == pytest.approx(b3 / 2)


def test_inflight_counts():
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(0.0, 1, 0, 4, GB, 4)
    net.start(0.0, 2, 0, 5, GB, 4)
    net.start(0.0, 3, 0, 3, GB, 4)
    net.start(0.0, 4, 2, 3, GB, 4)
    assert net.inflight(0).tolist() == [0, 0, 1, 2]
    assert net.inflight(2).tolist() == [0, 0, 1, 0]
    drain(net)
    assert net.inflight(0).tolist() == [0, 0, 0, 0]
    net.start(0.0, 9, 0, 4, GB, 4)
    with pytest.raises(ValueError, match="already in flight"):
        net.start(0.0, 9, 0, 4, GB, 4)


def test_background_scales_capacity():
    tiers = tuple(Tier(t.name, t.bandwidth_bytes_s, t.latency_s, 0.3)
                  for t in SEED003_NETWORK.tiers)
    spec = NetworkSpec(tiers)
    net = FlowNetwork(spec, LOCS)
    assert net.external_utilisation(5.0).tolist() == pytest.approx([0.3] * 4)
    net.start(0.0, 1, 0, 4, GB, 4)
    b3 = spec.tiers[3].bandwidth_bytes_s
    assert net.rate_of(1) == pytest.approx(b3 * 0.7)
    net.start(0.0, 2, 0, 4, GB, 4)
    assert net.rate_of(2) == pytest.approx(b3 * 0.7 / 2)


def test_time_varying_background_is_seeded_and_bounded():
    net = FlowNetwork(SEED003_NETWORK, LOCS, background=Background(0.2, 30.0, seed=3))
    same = FlowNetwork(SEED003_NETWORK, LOCS, background=Background(0.2, 30.0, seed=3))
    ts = np.linspace(0, 120, 241)
    c = np.array([net.external_utilisation(t) for t in ts])
    assert np.array_equal(c, np.array([same.external_utilisation(t) for t in ts]))
    assert c.min() >= 0 and c.max() <= 0.2 + 1e-12 and c.std() > 0.02
    # the rate of a new transfer follows the background at its start
    t = float(ts[int(np.argmax(c[:, 3]))])
    net.start(t, 1, 0, 4, GB, 4)
    assert net.rate_of(1) == pytest.approx(
        SEED003_NETWORK.tiers[3].bandwidth_bytes_s * (1 - c[:, 3].max()))


def test_contention_free_mode():
    b3 = SEED003_NETWORK.tiers[3].bandwidth_bytes_s
    net = FlowNetwork(SEED003_NETWORK, LOCS, fair_sharing=False)
    for key in range(5):
        net.start(0.0, key, 0, 4, GB, 4)
    assert net.inflight(0)[3] == 5
    done = drain(net)
    for key in range(5):
        assert net.transfer_time_estimate(0, 4, GB) == pytest.approx(GB / b3, rel=1e-3)
        assert done[key] == pytest.approx(net.transfer_time_estimate(0, 4, GB), rel=1e-12)


def test_zero_bytes_costs_only_latency():
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    net.start(2.0, 1, 0, 4, 0.0, 4)
    assert drain(net)[1] == pytest.approx(2.0 + SEED003_NETWORK.tiers[3].latency_s)


def test_waterfill_matches_python_filling_on_random_instances():
    """The numpy filling (large components) and the Python one (small) agree, and the
    result is max-min fair: every transfer has a saturated resource where it is maximal."""
    rng = np.random.default_rng(0)
    for trial in range(20):
        net = FlowNetwork(SEED003_NETWORK, LOCS)
        n = int(rng.integers(3, 20))
        for key in range(n):
            s, d = rng.choice(6, size=2, replace=False)
            net.start(0.0, key, int(s), int(d), GB, int(rng.integers(1, 5)))
        comp = list(net._transfers.values())
        caps = net._caps(0.0)
        net._fill_python(comp, caps)
        py = np.array([t.new for t in comp])
        vec = np.array([t.rate for t in comp])  # < 24 in flight: the Python filling ...
        assert np.allclose(py, vec, rtol=1e-9), trial
        cap = np.append(np.asarray(caps)[net._lvl], np.inf)
        er = np.array([net._row(t)[0] for t in comp])
        ew = np.array([net._row(t)[1] for t in comp])
        vec = waterfill(er, ew, cap)  # ... agrees with the numpy one
        assert np.allclose(py, vec, rtol=1e-9), trial
        for t, x in zip(comp, vec, strict=True):
            t.new = x
        # feasibility and bottleneck property
        load: dict[int, float] = {}
        for t, x in zip(comp, vec, strict=True):
            for r, m in zip(t.res, t.w, strict=True):
                load[r] = load.get(r, 0.0) + m * x
        assert all(load[r] <= caps[r & 3] * (1 + 1e-9) for r in load)
        for t, x in zip(comp, vec, strict=True):
            assert any(load[r] >= caps[r & 3] * (1 - 1e-9)
                       and all(u.new <= x * (1 + 1e-9) for u in net._members[r].values())
                       for r in t.res)


def test_waterfill_two_levels():
    # resource 0 (cap 3) shared by transfers 0,1,2; resource 1 (cap 1) only by transfer 2;
    # column 2 of rows 0,1 is padding (weight 0)
    res = np.array([[0, 2], [0, 2], [0, 1]])
    w = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    cap = np.array([3.0, 1.0, np.inf])
    assert waterfill(res, w, cap).tolist() == pytest.approx([1.0, 1.0, 1.0])
    cap[1] = 0.5
    assert waterfill(res, w, cap).tolist() == pytest.approx([1.25, 1.25, 0.5])
    # weights: transfer 2 puts two flows on resource 0
    w[2, 0] = 2.0
    cap[1] = 10.0
    assert waterfill(res, w, cap).tolist() == pytest.approx([0.75, 0.75, 0.75])
    # inactive rows get nothing and take nothing
    assert waterfill(res, w, cap, np.array([True, True, False])).tolist() == \
        pytest.approx([1.5, 1.5, 0.0])


def test_many_transfers_use_the_dense_filling_consistently():
    """Above the numpy threshold results equal those of the component-wise filling."""
    rng = np.random.default_rng(1)
    plan = [(int(s), int(d), float(rng.uniform(0.1, 2.0)) * GB)
            for s, d in (rng.choice(6, size=2, replace=False) for _ in range(60))]
    times = np.sort(rng.uniform(0, 1.0, 60))

    def run(threshold, monkeypatch=None):
        import planner.sim.netflow as nf
        old = nf._NUMPY_MIN
        nf._NUMPY_MIN = threshold
        try:
            net = FlowNetwork(SEED003_NETWORK, LOCS)
            out: dict[int, float] = {}
            for key, ((s, d, b), t0) in enumerate(zip(plan, times, strict=True)):
                while net.next_finish() <= t0:
                    f = net.next_finish()
                    out.update({k: f for k in net.pop_finished(f)})
                net.start(float(t0), key, s, d, b, 4)
            out.update(drain(net))
            return out
        finally:
            nf._NUMPY_MIN = old

    a, b = run(10**9), run(1)
    assert a.keys() == b.keys() == set(range(60))
    assert all(a[k] == pytest.approx(b[k], rel=1e-7) for k in a)


@pytest.mark.parametrize("threshold", [10**9, 1])
def test_incremental_rates_always_equal_a_full_refill(threshold, monkeypatch):
    """The fast paths (idle-rate start, no-op completion) and the component refills keep
    every rate equal to max-min recomputed from scratch after every event."""
    import planner.sim.netflow as nf

    monkeypatch.setattr(nf, "_NUMPY_MIN", threshold)
    rng = np.random.default_rng(7)
    net = FlowNetwork(SEED003_NETWORK, LOCS, gpus=[8, 4, 8, 8, 2, 8],
                      group_gpus=[4, 4, 8, 4, 2, 8])
    now, key, checked = 0.0, 0, 0
    for _ in range(400):
        if rng.random() < 0.55 or len(net) == 0:
            s, d = rng.choice(6, size=2, replace=False)
            before = net.next_finish()
            f = net.start(now, key, int(s), int(d), float(rng.uniform(0.01, 1.0)) * GB,
                          int(rng.choice([1, 2, 4])))
            # what start returns is all a caller needs to keep a wake-up at or before
            # every finish (a start may also delay finishes: then nothing is missed)
            after = net.next_finish()
            assert min(before, f) <= after <= f, key
            key += 1
        else:
            now = net.next_finish()
            assert net.pop_finished(now)
        ts = list(net._transfers.values())
        cap = np.append(np.asarray(net._caps(now))[net._lvl], np.inf)
        ref = waterfill(np.array([net._row(t)[0] for t in ts]),
                        np.array([net._row(t)[1] for t in ts]), cap)
        got = np.array([t.rate for t in ts])
        assert np.allclose(got, ref, rtol=1e-7), (key, now)
        checked += len(ts)
    assert checked > 1000  # enough concurrency to exercise sharing


@pytest.mark.parametrize("threshold", [10**9, 1])
def test_a_batched_burst_gets_the_rates_and_finishes_of_starts_one_by_one(threshold,
                                                                           monkeypatch):
    """A lockstep prefill pass starts its groups' transfers at one instant inside
    ``batched()``: one filling at its end gives every transfer the rate (and so the
    finish) the starts one by one give, with transfers already in flight; inside the
    block a start returns inf, and batched() does not nest."""
    import planner.sim.netflow as nf

    monkeypatch.setattr(nf, "_NUMPY_MIN", threshold)
    rng = np.random.default_rng(3)
    early = [(int(s), int(d), float(rng.uniform(0.2, 1.0)) * GB)
             for s, d in (rng.choice(6, size=2, replace=False) for _ in range(5))]
    burst = [(int(rng.choice([0, 2, 3])), int(d), float(rng.uniform(0.1, 1.0)) * GB)
             for d in rng.choice([1, 4, 5], size=12)]

    def run(batch: bool) -> dict[int, float]:
        net = FlowNetwork(SEED003_NETWORK, LOCS, gpus=[8, 4, 8, 8, 2, 8],
                          group_gpus=[1, 4, 1, 4, 2, 8])
        for key, (s, d, b) in enumerate(early):
            net.start(0.0, key, s, d, b, 2)
        t = 0.05
        assert not net.pop_finished(t)
        keys = range(len(early), len(early) + len(burst))
        if batch:
            with net.batched(t):
                assert all(net.start(t, k, s, d, b, 1) == math.inf
                           for k, (s, d, b) in zip(keys, burst, strict=True))
                with pytest.raises(RuntimeError):
                    with net.batched(t):
                        pass
        else:
            for k, (s, d, b) in zip(keys, burst, strict=True):
                net.start(t, k, s, d, b, 1)
        rates = {k: net.rate_of(k) for k in range(len(early) + len(burst))}
        assert all(r > 0 for r in rates.values())
        return {**drain(net), **{-1 - k: r for k, r in rates.items()}}

    one_by_one, batched = run(False), run(True)
    assert one_by_one.keys() == batched.keys()
    assert all(batched[k] == pytest.approx(one_by_one[k], rel=1e-7) for k in one_by_one)


def test_a_batched_start_on_an_idle_path_fills_nothing(monkeypatch):
    """Inside ``batched()`` a start whose idle rate saturates nothing others use takes
    its idle rate without a max-min filling, as a start outside it does; the first start
    of the block that would saturate a shared resource makes the block end in one
    filling, and every rate is still the one the starts one by one give."""
    fills: list[int] = []
    real = FlowNetwork._rebalance

    def counted(self, seeds, now, caps):
        fills.append(len(self._transfers))
        return real(self, seeds, now, caps)

    monkeypatch.setattr(FlowNetwork, "_rebalance", counted)
    net = FlowNetwork(SEED003_NETWORK, LOCS)
    with net.batched(0.0):
        net.start(0.0, 0, 0, 2, GB, 1)  # alone on its path
        net.start(0.0, 1, 3, 4, GB, 1)  # another path: nothing shared
    assert fills == []
    assert net.rate_of(0) == net.idle_rate(0, 2) and net.rate_of(1) == net.idle_rate(3, 4)
    with net.batched(0.0):
        net.start(0.0, 2, 0, 2, GB, 1)  # shares island 0's NIC with transfer 0
        net.start(0.0, 3, 1, 5, GB, 1)
    assert len(fills) == 1
    alone = FlowNetwork(SEED003_NETWORK, LOCS)
    for key, (s, d) in enumerate([(0, 2), (3, 4), (0, 2), (1, 5)]):
        alone.start(0.0, key, s, d, GB, 1)
    assert all(net.rate_of(k) == pytest.approx(alone.rate_of(k), rel=1e-9) for k in range(4))
