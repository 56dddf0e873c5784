"""Seed 004: the routing MDP (state, reward, guidance schedule), Double DQN and its router."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_sim_mixing import FakeView

from planner.core.errors import PlannerError
from planner.sim.protocol import HOLD, SimRequest
from planner.sim.rl.agent import DoubleDQN, DQNConfig, margin_loss, q_network
from planner.sim.rl.features import (
    StateConfig,
    build_state,
    decode_bucket,
    feature_scale,
    scan_instance,
)
from planner.sim.rl.reward import (
    RewardNormaliser,
    RewardTerms,
    ideal_time,
    pending_work,
    progress,
    step_reward,
)
from planner.sim.rl.schedule import GuidanceClock, guidance
from planner.sim.scenarios.mixed_workload import mixed_cluster


@pytest.fixture(scope="module")
def cluster():
    return mixed_cluster()


def _req(rid, p, d, pred, out=0, first=True):
    r = SimRequest(rid, 0.0, p, d, predicted_output=pred)
    r.tokens_out = out
    if first:
        r.t_first_token = 0.1
    return r


# ---------------------------------------------------------------- state
def test_state_dimension_is_27_for_four_instances():
    cfg = StateConfig(4)
    assert cfg.dim == 27 and cfg.n_actions == 5 and cfg.per_instance == 6
    assert StateConfig(8).dim == 51
    assert q_network(cfg.dim, cfg.n_actions)[0].in_features == 27
    assert q_network(cfg.dim, cfg.n_actions)[-1].out_features == 5


def test_decode_buckets_edges():
    edges = (256, 2048)
    assert [decode_bucket(t, edges) for t in (0, 255, 256, 2047, 2048, 9000)] == \
        [0, 0, 1, 1, 2, 2]


def test_state_features_hand_built(cluster):
    v = FakeView(cluster)
    cfg = StateConfig(4)
    v.router_queue = 700  # capped at 512
    v.running[:] = [2, 0, 0, 0]
    v.queued[:] = [30, 0, 0, 0]
    v.kv_free_tokens[1] = 0.25 * cluster.islands[1].kv_capacity_tokens
    reqs0 = [_req(1, 100, 50, 250, out=10), _req(2, 300, 900, 1000, out=100),
             _req(3, 50, 10, 250, first=False)]
    step = v.step_time(0, 2, 255.0)
    scans = [scan_instance(reqs0, cfg, 0.0, step)] + [scan_instance([], cfg, 0.0, step)
                                                      for _ in range(3)]
    head = _req(9, 640, 3000, 4000, first=False)
    s = build_state(cfg, v, head, np.arange(4), scans)
    assert s.shape == (27,)
    assert s[:3].tolist() == [512, 640, 2]
    # instance 0: 1 in prefill, decode buckets [1 (250), 1 (1000), 0]
    assert s[3:7].tolist() == [1, 1, 1, 0]
    assert s[7] == round(1 - 32 / 128, 2)  # free batch slots bind
    # earliest completion: min(250 - 10, 1000 - 100) = 240 tokens at the step time
    assert s[8] == round(240 * step, 2)
    assert s[9:13].tolist() == [0, 0, 0, 0] and s[14] == 0.0
    assert s[13] == 0.25 and s[13 + 6] == 1.0  # instance 1: KV binds; instance 2 free
    assert scans[0].resident == 110 + 400 + 50
    # router-side token estimate: 1 + (now - t_first) / step once the clock has moved on
    later = scan_instance(reqs0, cfg, 0.1 + 20 * step, step, {1: 2.0, 2: 4.0, 3: 1.0})
    assert later.resident == pytest.approx(100 + 21 + 300 + 100 + 50)
    assert later.pending == pytest.approx((1 - 21 / 250) / 2 + (1 - 100 / 1000) / 4 + 1.0)
    x = s * feature_scale(cfg, 128)
    assert x[0] == 1.0 and np.all(np.abs(x) <= 5)


# ---------------------------------------------------------------- reward
def test_reward_terms():
    a = _req(1, 100, 50, 200, out=50)  # f = 0.25
    b = _req(2, 100, 50, 100, out=150)  # f clipped to 1
    t_hat = {1: 2.0, 2: 1.0}
    assert progress(a) == 0.25 and progress(b) == 1.0
    pend = pending_work([a, b], t_hat)
    assert pend == pytest.approx(0.75 / 2.0)
    r = step_reward(pend, 0.04, completed=3, gap=-0.2, weight=0.5)
    assert r.pending == pytest.approx(-0.375 * 2)  # two Δt of 0.02 s
    assert r.completion == 180.0  # r_w = 60 per completion
    assert r.guidance == pytest.approx(-0.1)  # + w_k h, h <= 0 -> a penalty
    assert r.total == pytest.approx(-0.75 + 180 - 0.1)
    assert step_reward(pend, 0.0, 0, 0.0, 1.0).total == 0.0
    with pytest.raises(ValueError):
        step_reward(pend, 0.02, 0, 0.3, 1.0)
    assert ideal_time(0.05, 0.01, 100) == pytest.approx(1.05)


def test_hurl_schedule():
    g = 0.99
    assert guidance(0, "guided") == (0.0, pytest.approx(g))
    d5, w5 = guidance(5, "guided")
    assert w5 == pytest.approx(g * math.exp(-2.5)) and d5 + w5 == pytest.approx(g)
    d10, w10 = guidance(10, "guided")
    assert w10 < w5 < g and d10 > d5
    assert guidance(3, "baseline") == (g, 0.0)
    assert guidance(3, "aware") == (g, 1.0)
    with pytest.raises(PlannerError):
        guidance(0, "greedy")


def test_guidance_clock_counts_decisions():
    c = GuidanceClock("guided", per_episode=100)
    assert c.tick() == guidance(0, "guided")
    for _ in range(49):
        c.tick()
    assert c.k == 0.5
    d, w = c.current()
    assert w == pytest.approx(0.99 * math.exp(-0.25)) and d == pytest.approx(0.99 - w)
    assert GuidanceClock("aware").tick() == (0.99, 1.0)
    with pytest.raises(PlannerError):
        GuidanceClock("guided", per_episode=0)


def test_reward_normaliser_puts_guidance_on_the_task_scale():
    norm = RewardNormaliser()
    # raw units: task reward ~ ±100 per decision, h ~ -0.01: invisible without scaling
    r1 = norm(RewardTerms(-40.0, 120.0, 0.0), 0.0, 1.0)
    assert r1 == pytest.approx(1.0) and norm.s_ab == 80.0
    r2 = norm(RewardTerms(-120.0, 0.0, -0.01), -0.01, 0.5)
    assert norm.s_ab == pytest.approx(100.0) and norm.s_h == pytest.approx(0.01)
    assert r2 == pytest.approx(-1.2 - 0.5)  # the misrouting costs half a typical decision
    r3 = norm(RewardTerms(-100.0, 0.0, -0.03), -0.03, 1.0)
    assert norm.s_h == pytest.approx(0.02) and r3 == pytest.approx(-1.0 - 1.5)


# ---------------------------------------------------------------- agent
def _fill(agent, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        s = rng.random(agent.dim).astype(np.float32)
        agent.observe(s, int(rng.integers(agent.n_actions)), float(rng.normal()),
                      rng.random(agent.dim).astype(np.float32))


def test_double_dqn_learns_deterministically():
    cfg = DQNConfig(batch=32, warmup=64, train_every=2, target_sync=10)
    torch.set_num_threads(1)
    a1, a2 = DoubleDQN(27, 5, config=cfg, seed=5), DoubleDQN(27, 5, config=cfg, seed=5)
    w0 = a1.online[0].weight.detach().clone()
    assert torch.equal(w0, a2.online[0].weight)
    _fill(a1, 200, 1)
    _fill(a2, 200, 1)
    assert a1.updates == (200 - 64) // 2 + 1
    assert not torch.equal(w0, a1.online[0].weight)
    for p, q in zip(a1.online.parameters(), a2.online.parameters(), strict=True):
        assert torch.equal(p, q)
    a3 = DoubleDQN(27, 5, config=cfg, seed=6)
    assert not torch.equal(w0, a3.online[0].weight)


def test_double_dqn_fits_a_bandit():
    """A one-step problem (γ = 0): Q(s, a) must approach the mean reward of each action."""
    cfg = DQNConfig(batch=64, warmup=64, train_every=1, lr=3e-3, reward_scale=1.0)
    agent = DoubleDQN(3, 3, config=cfg, seed=0)
    agent.gamma = 0.0
    rng = np.random.default_rng(0)
    means = np.array([0.2, 1.0, -0.5])
    s = np.ones(3, np.float32)
    for _ in range(1500):
        a = int(rng.integers(3))
        agent.observe(s, a, float(means[a] + 0.1 * rng.normal()), s)
    q = agent.q_values(s)
    assert int(np.argmax(q)) == 1
    assert q == pytest.approx(means, abs=0.15)


def test_margin_loss_and_masked_double_dqn_target():
    q = torch.tensor([[1.0, 2.0, 0.5], [3.0, 0.0, 0.0]])
    a_e = torch.tensor([1, 1])
    allv = torch.ones(2, 3, dtype=torch.bool)
    # row 0: a_E already best by 1.0 > margin -> 0; row 1: 3 + 0.8 - 0 = 3.8
    assert float(margin_loss(q, a_e, allv, 0.8)) == pytest.approx(3.8 / 2)
    masked = torch.tensor([[True, True, True], [False, True, True]])
    assert float(margin_loss(q, a_e, masked, 0.8)) == pytest.approx(0.8 / 2)
    # Double DQN bootstrap skips actions invalid in s': s0 -> s1 -> end (absorbing, r = 0)
    cfg = DQNConfig(batch=16, warmup=16, train_every=1, target_sync=5, lr=1e-2)
    agent = DoubleDQN(3, 2, config=cfg, seed=0)
    agent.gamma = 0.5
    s0, s1, end = np.eye(3, dtype=np.float32)
    for _ in range(600):
        agent.observe(s0, 0, 0.0, s1, valid2=np.array([True, False]))  # at s1 only a = 0
        agent.observe(s1, 0, -1.0, end)
        agent.observe(s1, 1, 5.0, end)
        agent.observe(end, int(agent.rng.integers(2)), 0.0, end)
    q1 = agent.q_values(s1)
    assert q1 == pytest.approx([-1.0, 5.0], abs=0.3)
    # Q(s0, 0) = 0.5 Q(s1, 0) = -0.5, not 0.5 Q(s1, 1) = 2.5
    assert agent.q_values(s0)[0] == pytest.approx(-0.5, abs=0.3)


def test_pretraining_on_demonstrations_imitates_the_teacher():
    """Demonstrations of 'pick the action named by the one-hot state' with an
    uninformative reward: the margin loss alone must make the greedy policy copy it."""
    cfg = DQNConfig(batch=64, lr=3e-3, margin=0.8)
    agent = DoubleDQN(4, 4, config=cfg, seed=1)
    agent.gamma = 0.0
    rng = np.random.default_rng(0)
    eye = np.eye(4, dtype=np.float32)
    for _ in range(400):
        k = int(rng.integers(4))
        agent.observe(eye[k], k, float(rng.normal()), eye[int(rng.integers(4))], demo=True)
    assert agent.replay.size == 0 and agent.demo.size == 400 and agent.updates == 0
    with pytest.raises(ValueError):
        DoubleDQN(4, 4, config=cfg).pretrain(1)
    agent.pretrain(300)
    assert agent.updates == 300
    assert [int(np.argmax(agent.q_values(eye[k]))) for k in range(4)] == [0, 1, 2, 3]


def test_dqn_router_masks_instances_without_kv_room(cluster):
    from planner.sim.routers.dqn import DQNRouter

    cfg = StateConfig(4)
    net = q_network(cfg.dim, cfg.n_actions)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net[-1].bias[:] = torch.tensor([1.0, 0.5, 0.0, 0.0, -1.0])  # prefers instance 0
    v = FakeView(cluster)
    cap = cluster.islands[0].kv_capacity_tokens
    r = DQNRouter(net=net, state_config=cfg)
    r.reset(v, np.random.default_rng(0))
    r.t_hat.update({100 + i: 1.0 for i in range(4)})
    r.ledger.add(_req(100, cap + 1, 10, 250, first=False), 0)  # instance 0 over its KV
    assert r.route_arrival(_req(0, 100, 50, 250, first=False), v) == 1
    for i in (1, 2, 3):
        r.ledger.add(_req(100 + i, cap + 1, 10, 250, first=False), i)
    assert r.route_arrival(_req(1, 100, 50, 250, first=False), v) == HOLD
    assert r.masked_holds == 1
    free = DQNRouter(net=net, state_config=cfg, mask=False)
    free.reset(v, np.random.default_rng(0))
    free.t_hat[100] = 1.0
    free.ledger.add(_req(100, cap + 1, 10, 250, first=False), 0)
    assert free.route_arrival(_req(0, 100, 50, 250, first=False), v) == 0


def test_teacher_mode_replays_the_mixing_greedy_and_stores_demonstrations(cluster):
    from planner.sim.engine import simulate
    from planner.sim.routers.dqn import DQNRouter
    from planner.sim.routers.mixing import MixingRouter
    from planner.sim.scenarios.mixed_workload import SCENARIO_RATE, mixed_requests

    cfg = StateConfig(4)
    agent = DoubleDQN(cfg.dim, cfg.n_actions, config=DQNConfig(batch=32, warmup=10), seed=0)
    reqs = mixed_requests(300, SCENARIO_RATE, 7)
    ref = simulate(cluster, reqs, MixingRouter(), seed=0)
    ref_islands = [r.prefill_island for r in ref.requests]
    router = DQNRouter(net=agent.online, state_config=cfg, learner=agent,
                       teacher=MixingRouter(), normaliser=RewardNormaliser())
    res = simulate(cluster, mixed_requests(300, SCENARIO_RATE, 7), router, seed=0)
    assert [r.prefill_island for r in res.requests] == ref_islands
    assert agent.demo.size == router.decisions - 1 and agent.replay.size == 0
    assert agent.updates == 0  # demonstrations wait for pretrain()
    held = agent.demo.a[:agent.demo.size] == cfg.n_instances
    assert held.sum() == router.holds - (router.prev[1] == cfg.n_instances)
    with pytest.raises(PlannerError):
        DQNRouter(net=agent.online, state_config=cfg, teacher=MixingRouter())


def test_dqn_router_holds_on_noop_and_forces_after_tau_max(cluster):
    from planner.sim.routers.dqn import DQNRouter

    cfg = StateConfig(4)
    net = q_network(cfg.dim, cfg.n_actions)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net[-1].bias[:] = torch.tensor([0.0, 0.5, 0.0, 0.0, 1.0])  # prefers the no-op
    r = DQNRouter(net=net, state_config=cfg, tau_max=2.0)
    v = FakeView(cluster)
    r.reset(v, np.random.default_rng(0))
    req = _req(0, 100, 50, 250, first=False)
    assert r.route_arrival(req, v) == HOLD and r.holds == 1
    v.now = 2.5
    assert r.route_arrival(req, v) == 1 and r.forced == 1  # best routing action
    assert r.ledger.where[0] == 1


def test_dqn_router_rejects_wrong_cluster_size():
    from planner.sim.cluster import make_cluster
    from planner.sim.routers.dqn import DQNRouter

    small = mixed_cluster(2)
    cfg = StateConfig(4)
    r = DQNRouter(net=q_network(cfg.dim, cfg.n_actions), state_config=cfg)
    with pytest.raises(PlannerError, match="4 instances"):
        r.reset(FakeView(make_cluster(small.islands, small.network, small.model)),
                np.random.default_rng(0))


# ---------------------------------------------------------------- with the engine
def _mini_train(seed):
    from planner.sim.rl.train import TrainConfig, train

    cfg = TrainConfig(episodes=2, explore_episodes=2, requests=300, seed=seed,
                      demo_episodes=1, pretrain_steps=20,
                      dqn=DQNConfig(batch=64, warmup=100, train_every=2, target_sync=50))
    return train(cfg)


def test_mini_training_run_changes_weights_and_is_deterministic():
    from planner.sim.rl.agent import init_network

    a = _mini_train(3)
    b = _mini_train(3)
    fresh = q_network(27, 5)
    init_network(fresh, 3)
    assert [r["phase"] for r in a.curve] == ["demo", "eval", "rl", "rl"]
    assert a.agent.demo.size == a.curve[0]["decisions"] - 1 >= 299
    assert a.agent.updates > 50 + 20
    assert all(r["completed"] == 300 for r in a.curve)
    rl0 = a.curve[2]
    assert rl0["epsilon"] == pytest.approx(0.2)  # warm start: little exploration
    # the clock runs in the agent's decisions: w fell below w_0 = 0.99 within episode 0
    assert 0.0 < rl0["guidance_w"] < 0.99 and rl0["k_clock"] == rl0["decisions"] / 2500
    assert not torch.equal(fresh[0].weight, a.agent.online[0].weight)
    for p, q in zip(a.agent.online.parameters(), b.agent.online.parameters(), strict=True):
        assert torch.equal(p, q)
    assert [r["reward"] for r in a.curve] == [r["reward"] for r in b.curve]


def test_committed_policy_loads_and_routes():
    from planner.sim.engine import simulate
    from planner.sim.routers.dqn import weights_path
    from planner.sim.routers.registry import make_router
    from planner.sim.scenarios.mixed_workload import SCENARIO_RATE, mixed_requests

    assert weights_path("guided").is_file()
    router = make_router("dqn")
    assert router.cfg.dim == 27 and router.meta["variant"] == "guided"
    assert router.mask and router.meta["train"]["demo_episodes"] > 0
    reqs = mixed_requests(1000, SCENARIO_RATE, 123)
    res = simulate(mixed_cluster(), reqs, router, seed=0)
    assert all(r.t_done == r.t_done for r in res.requests)
    used = np.bincount([r.prefill_island for r in res.requests], minlength=4)
    assert np.count_nonzero(used) == 4  # a real policy spreads the load
    assert router.decisions >= 1000 and router.forced == 0
    # the trained policy beats round-robin on an episode it never saw (validation (c))
    rr = simulate(mixed_cluster(), mixed_requests(1000, SCENARIO_RATE, 123),
                  make_router("round-robin"), seed=0)
    e2e = [np.mean([r.t_done - r.arrival for r in x.requests]) for x in (res, rr)]
    assert e2e[0] < 0.97 * e2e[1]
