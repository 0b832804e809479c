"""sprout.gym.CellularLinkEnv: Gymnasium's checker, determinism, and episodes of a fixed-rate
policy and of a policy that follows the Sprout forecast against the simulator and the
link's arithmetic."""

import os
from pathlib import Path

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import sprout  # noqa: E402
from sprout import _sprout  # noqa: E402
import sprout.gym as sg  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"
LTE = TRACES / "Verizon-LTE-short"


def lte_pair():
    """Verizon-LTE-short (the paper's Figure 1 link) if the shared traces are there, else a
    synthetic pair of the paper's model."""
    if Path(f"{LTE}.up").is_file():
        return _sprout.Trace.load(f"{LTE}.up"), _sprout.Trace.load(f"{LTE}.down")
    return _sprout.Trace.synthetic(seed=5, seconds=120), _sprout.Trace.synthetic(seed=6, seconds=120)


@pytest.mark.parametrize("action", ["rate", "window"])
@pytest.mark.parametrize("source", ["trace", "synthetic"])
def test_check_env(action, source):
    kw = {"episode_seconds": 2.0, "action": action}
    if source == "trace":
        up, down = lte_pair()
        env = sg.CellularLinkEnv(uplink=up, downlink=down, **kw)
    else:
        env = sg.CellularLinkEnv(**kw)
    check_env(env, skip_render_check=True)
    assert env.observation_space.shape == (16,)
    assert env.observation_names[8] == "forecast_1"


def test_gym_make():
    env = gym.make("sprout/CellularLink-v0", episode_seconds=1.0, ticks_per_step=5)
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs.shape == (16,)
    steps = 0
    truncated = False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        steps += 1
        assert not terminated
        assert set(info) >= {"throughput_mbps", "self_inflicted_s", "time_s"}
    assert steps == 10  # 1 s of 100 ms steps
    env.close()


def run_episode(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = [(obs.copy(), 0.0, dict(info))]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs.copy(), r, info))
        if term or trunc:
            break
    return out


def same(a, b):
    return len(a) == len(b) and all(
        np.array_equal(x[0], y[0]) and x[1] == y[1] and x[2] == y[2] for x, y in zip(a, b)
    )


@pytest.mark.parametrize("action", ["rate", "window"])
def test_same_seed_same_actions_identical_episode(action):
    up, down = lte_pair()
    make = lambda: sg.CellularLinkEnv(  # noqa: E731
        uplink=up, downlink=down, episode_seconds=5.0, action=action, loss=0.01
    )
    rng = np.random.default_rng(7)
    hi = 8.0 if action == "rate" else 60.0
    actions = [np.array([x], dtype=np.float32) for x in rng.uniform(0, hi, 250)]
    a = run_episode(make(), 11, actions)
    b = run_episode(make(), 11, actions)
    assert len(a) == 251
    assert same(a, b)
    c = run_episode(make(), 12, actions)
    assert not same(a, c)  # another start in the trace, other losses
    # Resets without a seed continue a reproducible sequence.
    e1, e2 = make(), make()
    run_episode(e1, 11, actions[:10])
    run_episode(e2, 11, actions[:10])
    assert same(run_episode(e1, None, actions), run_episode(e2, None, actions))


def test_fixed_rate_matches_the_queue_arithmetic():
    """A fixed rate through the trace: every packet's departure is the first unused
    opportunity at or after it reaches the queue (sent + 20 ms), computed here from the
    trace alone; the episode's capacity and omniscient delay are sprout.simulate's."""
    up, down = lte_pair()
    rate, secs = 2.0, 30.0
    env = sg.CellularLinkEnv(uplink=up, downlink=down, episode_seconds=secs, random_start=False)
    env.reset(seed=0)
    truncated = False
    while not truncated:
        _, _, _, truncated, info = env.step(rate)
    arr = env.arrivals()
    opps = down.opportunities_ms.astype(np.int64) * 1000
    interval_ns = round(1500 * 8 * 1e9 / (rate * 1e6))
    sent = np.arange(int(secs * 1e9 // interval_ns) + 1, dtype=np.int64) * interval_ns // 1000
    sent = sent[sent < secs * 1e6]
    departures, j = [], 0
    for enter in sent + 20_000:
        if opps[j] < enter:
            j = int(np.searchsorted(opps, enter, side="left"))
        if opps[j] > secs * 1e6:
            break
        departures.append(opps[j])
        j += 1
    assert len(departures) > 4000
    np.testing.assert_array_equal(arr["arrived_us"], departures)
    np.testing.assert_array_equal(arr["sent_us"], sent[: len(departures)])
    m = env.episode_metrics(skip_s=5.0)
    in_window = (np.array(departures) >= 5e6) & (np.array(departures) < secs * 1e6)
    assert m["throughput_kbps"] == pytest.approx(in_window.sum() * 1500 * 8 / 25.0 / 1e3)
    assert m["throughput_kbps"] <= rate * 1e3 * 1.01
    sim = _sprout.simulate("sprout", up, down, duration=secs, skip=5.0).downlink
    assert m["capacity_kbps"] == sim["capacity_kbps"]
    assert m["omniscient_p95_ms"] == sim["omniscient_p95_ms"]


@pytest.mark.parametrize("rate,growth", [(6.0, 0.0), (18.0, 0.5)])
def test_fixed_rate_on_a_constant_link(rate, growth):
    """12 Mbit/s constant (one opportunity per ms): below capacity every packet takes 20 ms
    plus at most one ms; above it, a packet sent at s waits (rate / 12 - 1) x s more."""
    link = _sprout.Trace.constant(12.0, 60.0)
    env = sg.CellularLinkEnv(uplink=link, downlink=link, episode_seconds=4.0, random_start=False)
    env.reset(seed=0)
    truncated = False
    while not truncated:
        _, _, _, truncated, info = env.step(rate)
    arr = env.arrivals()
    owd = (arr["arrived_us"] - arr["sent_us"]).astype(float)
    expected = 20_000 + growth * arr["sent_us"]
    assert np.all(np.abs(owd - expected) <= 1_001)
    m = env.episode_metrics(skip_s=1.0)
    assert m["throughput_kbps"] == pytest.approx(min(rate, 12.0) * 1e3, rel=1e-3)


def test_forecast_policy_against_sprout_simulate():
    """The Sprout-forecast policy (Sprout's window rule: keep in flight the packets the
    forecast gives for ticks 2-6) over 60 s of Verizon-LTE-short, measured from 10 s, against
    sprout.simulate of Sprout and of Cubic on the same traces and window.

    Comparable, not equal: the environment's sender hears a report every tick on an otherwise
    idle reverse link, and its model observes an empty tick only when our data was queued;
    Sprout's feedback rides on its own uplink traffic (behind its queue) and its receiver
    counts silent ticks after the sender's announced pause. Measured here: 2859 kbit/s
    against Sprout's 2029 (1.41x; 0.5-1.7x over the paper's four links and synthetic ones).
    Stated tolerance: throughput within 0.5-2x of Sprout's, the same capacity and omniscient
    delay, and self-inflicted delay in Sprout's regime: below a quarter of Cubic's."""
    up, down = lte_pair()
    secs, skip = 60.0, 10.0
    env = sg.CellularLinkEnv(
        uplink=up, downlink=down, episode_seconds=secs, random_start=False, action="window"
    )
    obs, _ = env.reset(seed=0)
    truncated = False
    while not truncated:
        obs, _, _, truncated, _ = env.step(sg.sprout_forecast_action(obs, "window"))
    mine = env.episode_metrics(skip_s=skip)
    sprout_run = _sprout.simulate("sprout", up, down, duration=secs, skip=skip).downlink
    cubic_run = _sprout.simulate("cubic", up, down, duration=secs, skip=skip).downlink
    ratio = mine["throughput_kbps"] / sprout_run["throughput_kbps"]
    print(f"policy {mine['throughput_kbps']:.0f} kbit/s, si {mine['self_inflicted_ms']:.0f} ms; "
          f"sprout {sprout_run['throughput_kbps']:.0f}, si {sprout_run['self_inflicted_ms']:.0f}; "
          f"cubic si {cubic_run['self_inflicted_ms']:.0f}; ratio {ratio:.2f}")
    assert 0.5 <= ratio <= 2.0
    assert mine["capacity_kbps"] == sprout_run["capacity_kbps"]
    assert mine["omniscient_p95_ms"] == sprout_run["omniscient_p95_ms"]
    assert mine["self_inflicted_ms"] < 0.25 * cubic_run["self_inflicted_ms"]
    assert mine["utilization"] < 0.95


def test_rewards_add_up_to_the_episode():
    up, down = lte_pair()
    env = sg.CellularLinkEnv(uplink=up, downlink=down, episode_seconds=10.0, reward_weight=3.0)
    env.reset(seed=4)
    total_bytes, rewards, truncated = 0, [], False
    while not truncated:
        _, r, _, truncated, info = env.step(3.0)
        total_bytes += info["delivered_bytes"]
        rewards.append(r)
        assert r == pytest.approx(info["throughput_mbps"] - 3.0 * info["self_inflicted_s"])
        assert info["self_inflicted_s"] >= 0.0
    assert total_bytes == int(env.arrivals()["bytes"].sum())
    assert len(rewards) == 500


def test_bad_options_raise():
    with pytest.raises(sprout.SproutError, match="unknown action"):
        sg.CellularLinkEnv(action="speed")
    with pytest.raises(sprout.SproutError, match="ticks_per_step"):
        sg.CellularLinkEnv(ticks_per_step=0)
    with pytest.raises(sprout.SproutError, match="unknown key"):
        sg.CellularLinkEnv(params=["nope=1"])
    with pytest.raises(FileNotFoundError):
        sg.CellularLinkEnv(trace="no-such-link", traces_dir="/nonexistent")
