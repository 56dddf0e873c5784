"""A slot whose islands have little room to spare is checked on as many seeds as a static
headline (planner.schedule.promise.thin_slots / check_slots): one seed's noise must not
carry a peak at the tiers' caps."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import planner.schedule.promise as promise
from planner.sim.closed_loop import ATTAIN_TARGET, HEADROOM, VERIFY_SEEDS


def _cols(demand: np.ndarray):
    model = SimpleNamespace(service=SimpleNamespace(name="chat"),
                            plan=lambda layout, _rate: SimpleNamespace(
                                to_dict=lambda: {"layout": layout}))
    profile = SimpleNamespace(demand=lambda: demand)
    return SimpleNamespace(models=[model], request=SimpleNamespace(profile=profile))


def test_thin_slots_are_those_within_the_headroom(monkeypatch):
    demand = np.array([[10.0], [10.0], [10.0], [0.0]])
    caps = {0: 20.0, 1: 10.0 * (1 + HEADROOM) - 1e-6, 2: 10.0 * (1 + HEADROOM) + 1e-6,
            3: 0.0}
    monkeypatch.setattr(promise, "capacity",
                        lambda _p, _r, slot: np.array([caps[slot]]))
    sched = SimpleNamespace(problem=None, reserved=None, slots=[0, 1, 2, 3])
    # slot 3 has no demand, so no capacity is thin for it
    assert promise.thin_slots(sched, demand, [0, 1, 2, 3]) == {1}


def test_a_thin_slot_runs_more_seeds_until_one_misses(monkeypatch):
    demand = np.array([[5.0], [6.0], [7.0]])
    calls = []

    def fake(plan, rate, seed, **_kw):
        calls.append((rate, seed))
        # slot 1's third seed misses
        miss = rate == 6.0 and len([c for c in calls if c[0] == 6.0]) == 3
        return SimpleNamespace(attainment=ATTAIN_TARGET - 0.01 if miss else 1.0)

    monkeypatch.setattr(promise, "simulate_at", fake)
    checks = promise.check_slots(_cols(demand), lambda _t: {"chat": (("H100-SXM", 8),)},
                                 [0, 1, 2], seed=0, thin={1, 2})
    per_slot = {t: [c for c in checks if c.slot == t] for t in range(3)}
    assert len(per_slot[0]) == 1                      # room to spare: one seed
    assert len(per_slot[1]) == 3                      # stops at the seed that misses
    assert per_slot[1][-1].attainment < ATTAIN_TARGET
    assert len(per_slot[2]) == promise.THIN_SLOT_SEEDS == 1 + VERIFY_SEEDS
    seeds = [c.seed for c in checks]
    assert len(set(seeds)) == len(seeds) == len(calls)  # every run on its own seed
    assert 0 not in seeds                             # never the search's seed
    # a slot's first seed is the one it had before: a schedule without thin slots is
    # checked exactly as it was
    plain = []
    monkeypatch.setattr(promise, "simulate_at",
                        lambda p, r, s, **k: plain.append(s) or SimpleNamespace(attainment=1.0))
    promise.check_slots(_cols(demand), lambda _t: {"chat": (("H100-SXM", 8),)},
                        [0, 1, 2], seed=0)
    assert plain == [per_slot[t][0].seed for t in range(3)]


@pytest.mark.parametrize("thin", [set(), {0}])
def test_identical_runs_are_simulated_once(monkeypatch, thin):
    demand = np.array([[5.0], [5.0]])  # two slots, same islands and rate
    calls = []
    monkeypatch.setattr(promise, "simulate_at",
                        lambda p, r, s, **k: calls.append(s) or SimpleNamespace(attainment=1.0))
    checks = promise.check_slots(_cols(demand), lambda _t: {"chat": (("H100-SXM", 8),)},
                                 [0, 1], seed=0, thin=thin)
    # the second slot reuses the first's runs seed rank by seed rank, and says which
    # seed they ran on
    assert len(calls) == (promise.THIN_SLOT_SEEDS if thin else 1)
    assert len(checks) == (promise.THIN_SLOT_SEEDS + 1 if thin else 2)
    assert checks[-1].seed == calls[0]
