"""The outer searches end to end on the cheap synthetic objective (Ax + BoTorch).

Iteration counts are tiny: these tests check behaviour (validity, determinism,
improvement, resume), not convergence.
"""

from __future__ import annotations

import json
import logging
import statistics
import warnings

import pytest

from planner.core.errors import PlannerError
from planner.outer import (
    OUTER_SEARCHES,
    DirectBO,
    DividerBO,
    RandomSearch,
    Score,
    SearchResult,
    SearchSpace,
    TypeSupply,
)
from planner.outer.synthetic import SyntheticObjective, default_space

# Two types, no budget: the divider's 4-dimensional space (n, s per type).
SMALL = SearchSpace(types=(TypeSupply("H200", 64, 3.5, 1), TypeSupply("B200", 32, 5.5, 1)))
BUDGET = default_space(512.0)  # three types, $1120/h of GPUs, $512/h budget


class Interrupting(SyntheticObjective):
    """Raises KeyboardInterrupt (a Ctrl-C) on call number ``limit + 1``."""

    def __init__(self, space, limit):
        super().__init__(space)
        self.limit = limit

    def __call__(self, layout):
        if self.calls >= self.limit:
            raise KeyboardInterrupt
        return super().__call__(layout)


def _layouts(result):
    return [h.layout for h in result.history]


def test_registry_names():
    assert set(OUTER_SEARCHES) >= {"divider", "direct", "random"}
    assert OUTER_SEARCHES["divider"] is DividerBO


@pytest.fixture(scope="module")
def budget_run():
    obj = SyntheticObjective(BUDGET)
    calls = []
    search = DividerBO(iterations=2, batch_size=6, sobol_trials=6, polish=0)
    res = search.search(BUDGET, obj, seed=5, progress=lambda d, n, b: calls.append((d, n, b)))
    return search, obj, res, calls


def test_budget_run_is_valid_and_counted(budget_run):
    _, obj, res, calls = budget_run
    assert len(res.history) == 18 and [h.index for h in res.history] == list(range(18))
    assert [h.phase for h in res.history] == ["sobol"] * 6 + ["bo"] * 12
    for h in res.history:  # the repair keeps every proposal within budget and stock
        assert BUDGET.fits(h.layout), h.layout
        assert h.cost <= 512.0 + 1e-9
    # Each distinct layout was evaluated once; repeats came from the cache.
    assert obj.calls == res.evaluations == len(set(obj.seen))
    firsts = {h.layout for h in res.history if not h.cached}
    assert len(firsts) == len({h.layout for h in res.history})
    assert res.cache_hits == sum(h.cached for h in res.history)
    assert res.evaluations + res.cache_hits + sum(1 for h in res.history
                                                  if not h.layout and not h.cached) == 18
    # Best-so-far is monotone and ends at the best score.
    best = res.best_so_far()
    assert all(a <= b for a, b in zip(best, best[1:], strict=False))
    assert best[-1] == res.best_score.value == max(h.value for h in res.history if h.feasible)
    assert res.best_score.detail == {"layout": res.best_layout}  # the inner result
    assert [c[0] for c in calls] == list(range(1, 19)) and calls[-1][1] == 18
    assert res.wall_time >= res.history[-1].wall_time > 0


@pytest.mark.slow
def test_same_seed_same_result(budget_run):
    search, _, res, _ = budget_run
    again = search.search(BUDGET, SyntheticObjective(BUDGET), seed=5)
    assert _layouts(again) == _layouts(res)
    assert [h.value for h in again.history] == [h.value for h in res.history]
    other = search.search(BUDGET, SyntheticObjective(BUDGET), seed=6)
    assert _layouts(other) != _layouts(res)


@pytest.mark.slow
def test_bo_improves_on_its_sobol_start():
    improved, bo_means, random_means = 0, [], []
    for seed in range(4):
        res = DividerBO(iterations=2, batch_size=8, sobol_trials=8, polish=0).search(
            SMALL, SyntheticObjective(SMALL), seed=seed)
        sobol_best = max(h.value for h in res.history if h.phase == "sobol")
        improved += res.best_score.value > sobol_best + 1e-9
        bo_means.append(statistics.mean(h.value for h in res.history if h.phase == "bo"))
        rnd = RandomSearch(evaluations=24).search(SMALL, SyntheticObjective(SMALL), seed=seed)
        random_means.append(statistics.mean(h.value for h in rnd.history))
    assert improved >= 3
    # The surrogate steers proposals to better regions than uniform sampling does.
    assert statistics.mean(bo_means) > statistics.mean(random_means) + 2.0


def test_random_search_quasi_is_the_bo_warm_start(budget_run):
    _, _, res, _ = budget_run
    rnd = RandomSearch(evaluations=6, quasi=True).search(BUDGET, SyntheticObjective(BUDGET),
                                                         seed=5)
    assert _layouts(rnd) == _layouts(res)[:6]


@pytest.mark.slow
def test_direct_gp_respects_inventory_and_budget():
    obj = SyntheticObjective(BUDGET)
    res = DirectBO(slots=3, iterations=2, batch_size=4, sobol_trials=4).search(
        BUDGET, obj, seed=0)
    assert len(res.history) == 12 and sum(h.phase == "bo" for h in res.history) == 8
    for h in res.history:
        assert BUDGET.fits(h.layout) and h.cost <= 512.0 + 1e-9
        assert sum(1 for t, _ in h.layout if t == "H100") <= 3  # K = 3 slots per type
    assert res.best_score is not None and res.settings["surrogate"] == "gp"


def test_saasbo_surrogate_is_configured():
    # An end-to-end SAASBO run needs JAX to compile NUTS (10-30 s on this machine), so
    # it lives in benchmarks/bench_outer.py; here: the strategy Ax will run.
    from botorch.models import SingleTaskGP
    from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP

    from planner.outer.ax_backend import BOSettings, generation_strategy

    search = DirectBO(slots=2, surrogate="saasbo", saas_warmup=16, saas_samples=8,
                      saas_thinning=4)
    assert search.settings()["saas_warmup"] == 16
    spec = generation_strategy(BOSettings(**search._bo), seed=3).current_node.generator_specs[0]
    (config,) = spec.generator_kwargs["surrogate_spec"].model_configs
    assert config.botorch_model_class is SaasFullyBayesianSingleTaskGP
    assert config.mll_options == {"warmup_steps": 16, "num_samples": 8, "thinning": 4,
                                  "disable_progbar": True, "seed": 3}
    gp = generation_strategy(BOSettings(), seed=3).current_node.generator_specs[0]
    assert gp.generator_kwargs["surrogate_spec"].model_configs[0].botorch_model_class \
        is SingleTaskGP
    with pytest.raises(PlannerError):
        DirectBO(surrogate="saas")


@pytest.mark.slow
def test_target_mode_minimises_cost_subject_to_rate():
    space = default_space(None, target_rps=40.0)
    res = DividerBO(iterations=2, batch_size=6, sobol_trials=6, polish=0).search(
        space, SyntheticObjective(space), seed=1)
    qualifying = [h for h in res.history if h.feasible and h.value >= 40.0]
    assert qualifying, "no layout met the target"
    assert res.best_score.value >= 40.0
    assert res.best_score.cost_per_hour == min(h.cost for h in qualifying)
    best = res.best_so_far()  # $/h: +inf until the target is met, then non-increasing
    assert all(a >= b for a, b in zip(best, best[1:], strict=False))
    assert best[-1] == res.best_score.cost_per_hour
    # Procurement: the search chose fleets smaller than the whole inventory.
    assert min(h.cost for h in qualifying) < space.full_cost


def test_nothing_qualifies_gives_no_best_and_search_is_quiet(capfd, caplog):
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # Ax 1.3.1 + pandas emit several unless silenced
        res = DividerBO(iterations=1, batch_size=3, sobol_trials=3, polish=0).search(
            BUDGET, lambda lay: Score(0.0, BUDGET.cost(lay), False), seed=0)
    assert res.best_layout is None and res.best_score is None
    assert res.best_so_far() == [0.0] * 6
    out, err = capfd.readouterr()
    assert out == "" and err == "" and not caught
    assert not [r for r in caplog.records if r.name.startswith(("ax", "botorch"))]


def test_failed_generation_falls_back_to_random_batch(monkeypatch):
    from planner.outer.ax_backend import AxDriver

    real, failures = AxDriver.next_batch, []

    def flaky(self, q, batch):
        if batch == 0:
            failures.append(batch)
            raise RuntimeError("singular GP")
        return real(self, q, batch)

    monkeypatch.setattr(AxDriver, "next_batch", flaky)
    res = DividerBO(iterations=2, batch_size=3, sobol_trials=3, polish=0).search(
        BUDGET, SyntheticObjective(BUDGET), seed=0)
    assert failures == [0]
    assert [h.phase for h in res.history] == ["sobol"] * 3 + ["fallback"] * 3 + ["bo"] * 3
    assert all(BUDGET.fits(h.layout) for h in res.history)


def test_single_point_space_needs_no_search():
    space = SearchSpace(types=(TypeSupply("H200", 3, 3.5, 2),))
    seen = []
    res = DividerBO().search(space, lambda lay: seen.append(lay) or Score(1.0, 10.5, True),
                             seed=0)
    assert res.best_layout == (("H200", 3),) and seen == [(("H200", 3),)]
    assert len(res.history) == 1


def test_result_json_round_trip(budget_run, tmp_path):
    _, _, res, _ = budget_run
    path = tmp_path / "result.json"
    res.save(path)
    back = SearchResult.from_json(json.loads(path.read_text()))
    assert back.best_layout == res.best_layout
    assert back.best_score.value == res.best_score.value and back.best_score.detail is None
    assert back.history == res.history
    assert back.settings == json.loads(json.dumps(res.settings))


@pytest.mark.slow
def test_interrupted_bo_resumes_without_re_evaluating(tmp_path):
    search = DividerBO(iterations=3, batch_size=4, sobol_trials=4, polish=0)
    reference = search.search(BUDGET, SyntheticObjective(BUDGET), seed=2)
    path = tmp_path / "ckpt.json"
    first = Interrupting(BUDGET, limit=7)  # dies inside the first BO batch
    with pytest.raises(KeyboardInterrupt):
        search.search(BUDGET, first, seed=2, checkpoint=path)
    saved = json.loads(path.read_text())
    assert len(saved["tracker"]["history"]) == 7  # everything evaluated was saved
    second = SyntheticObjective(BUDGET)
    res = search.search(BUDGET, second, seed=2, checkpoint=path)
    assert res.resumed
    # Nothing evaluated before the interruption ran again, except one re-run of the
    # best layout when it came from the checkpoint (its inner result is not saved).
    again = set(first.seen) & set(second.seen)
    assert again <= {res.best_layout} and res.detail_refreshes == len(again)
    assert first.calls + second.calls == len(set(_layouts(res)) - {()}) + res.detail_refreshes
    # ... and the resumed run is exactly the uninterrupted one.
    assert _layouts(res) == _layouts(reference)
    assert [h.value for h in res.history] == [h.value for h in reference.history]
    assert res.best_score.detail is not None
    # A finished checkpoint resumes to the same result without new evaluations.
    third = SyntheticObjective(BUDGET)
    done = search.search(BUDGET, third, seed=2, checkpoint=path)
    assert _layouts(done) == _layouts(reference) and third.calls == done.detail_refreshes


def test_checkpoint_of_another_run_is_rejected(tmp_path):
    path = tmp_path / "ckpt.json"
    search = RandomSearch(evaluations=5)
    search.search(BUDGET, SyntheticObjective(BUDGET), seed=0, checkpoint=path)
    with pytest.raises(PlannerError, match="seed"):
        search.search(BUDGET, SyntheticObjective(BUDGET), seed=1, checkpoint=path)
    with pytest.raises(PlannerError, match="budget"):
        search.search(default_space(400.0), SyntheticObjective(BUDGET), seed=0,
                      checkpoint=path)
    path.write_text("{not json")
    with pytest.raises(PlannerError, match="ckpt.json"):
        search.search(BUDGET, SyntheticObjective(BUDGET), seed=0, checkpoint=path)
    with pytest.raises(PlannerError, match="seed"):
        search.search(BUDGET, SyntheticObjective(BUDGET), seed=-1)


def test_random_search_resumes(tmp_path):
    path = tmp_path / "rs.json"
    search = RandomSearch(evaluations=40, encoding="direct", slots=4)
    reference = search.search(BUDGET, SyntheticObjective(BUDGET), seed=3)
    first = Interrupting(BUDGET, limit=20)
    with pytest.raises(KeyboardInterrupt):
        search.search(BUDGET, first, seed=3, checkpoint=path)
    second = SyntheticObjective(BUDGET)
    res = search.search(BUDGET, second, seed=3, checkpoint=path)
    assert _layouts(res) == _layouts(reference)
    assert not (set(first.seen) & set(second.seen)) - {res.best_layout}
    assert all(BUDGET.fits(h.layout) for h in res.history)


@pytest.mark.parametrize("edit, field", [
    (lambda t: t["history"][2].update(value=float("nan")), "tracker.history[2].value"),
    (lambda t: t["history"][1].pop("feasible"), "tracker.history[1].feasible"),
    (lambda t: t["history"][0].update(layout="H200:x"), "tracker.history[0].layout"),
    (lambda t: t.update(evaluations=-3), "tracker.evaluations"),
    (lambda t: t.pop("history"), "tracker.history"),
    # issue 32: bounded lists -- a history longer than any search records, a layout of
    # more islands than the inventory has GPUs (as text, 31 characters)
    (lambda t: t["history"].extend([t["history"][0]] * 100_001), "tracker.history"),
    (lambda t: t["history"][0].update(layout="H200:1*10000000000000"),
     "tracker.history[0].layout"),
    (lambda t: t["history"][0].update(layout=[["H200", 1]] * 100_000),
     "tracker.history[0].layout"),
])
def test_corrupted_checkpoint_is_one_line_naming_the_field(tmp_path, edit, field):
    path = tmp_path / "ckpt.json"
    search = RandomSearch(evaluations=5)
    search.search(BUDGET, SyntheticObjective(BUDGET), seed=0, checkpoint=path)
    doc = json.loads(path.read_text())
    edit(doc["tracker"])
    path.write_text(json.dumps(doc))
    with pytest.raises(PlannerError) as err:
        search.search(BUDGET, SyntheticObjective(BUDGET), seed=0, checkpoint=path)
    assert f"'{field}'" in str(err.value) and str(path) in str(err.value)
