"""sprout.gym.CellularLinkEnv with an application at the sender (``app=...``): a bulk sender is
untouched, a constant stream below the agent's rate is delivered at the network's delay, one
above it waits in the sender, adaptive video follows the rate, and bad specs are refused."""

import math

import numpy as np
import pytest

pytest.importorskip("gymnasium")

import sprout  # noqa: E402
import sprout.gym as sg  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

APP_KEYS = {
    "app_offered_mbps",
    "app_backlog_bytes",
    "app_messages",
    "app_p50_ms",
    "app_p95_ms",
    "app_within_150ms",
}


def constant_env(app="bulk", action="rate", seconds=3.0):
    """A constant 12 Mbit/s link both ways (20 ms propagation), replayed from its start."""
    link = sprout.Trace.constant(12.0, 60.0)
    return sg.CellularLinkEnv(
        uplink=link,
        downlink=link,
        app=app,
        action=action,
        episode_seconds=seconds,
        random_start=False,
    )


def episode(env, action, seed=1):
    env.reset(seed=seed)
    infos, observations = [], []
    truncated = False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step([action])
        infos.append(info)
        observations.append(obs)
    return observations, infos


def test_bulk_is_the_default_and_has_no_app_figures():
    env = constant_env(seconds=1.0)
    assert env.engine.app == "bulk"
    assert "app" not in repr(env.engine)
    obs, infos = episode(env, 6.0)
    assert all(not (APP_KEYS & set(i)) for i in infos)
    assert env.app_metrics() is None
    # app="bulk" given explicitly is the same episode, bit for bit.
    obs2, infos2 = episode(constant_env("bulk", seconds=1.0), 6.0)
    assert all(np.array_equal(a, b) for a, b in zip(obs, obs2))
    assert infos == infos2


@pytest.mark.parametrize("action", ["rate", "window"])
def test_check_env_with_an_app(action):
    env = constant_env("video:rate=1M,fps=25", action=action, seconds=1.0)
    check_env(env, skip_render_check=True)
    assert env.engine.app == "video:rate=1M,fps=25,key=3,keyratio=5"


def test_a_stream_below_the_rate_is_delivered_at_network_delay():
    # 3 Mbit/s of 1200-byte datagrams paced at 6 Mbit/s: each leaves as it is created and
    # reaches the receiver 20-21 ms later.
    env = constant_env("constant:rate=3M")
    _, infos = episode(env, 6.0)
    for info in infos[5:]:
        assert APP_KEYS <= set(info)
        assert 20.0 <= info["app_p95_ms"] <= 21.0
        assert info["app_within_150ms"] == 1.0
        assert info["app_backlog_bytes"] <= 1200
        assert abs(info["app_offered_mbps"] - 3.0) < 0.4
    m = env.app_metrics(skip_s=1.0)
    assert abs(m["offered_kbps"] - 3000.0) < 5.0
    assert m["delay_p95_ms"] <= 21.0
    assert m["within_150ms"] > 0.99
    # The network carries the application's rate, not the pacer's.
    assert abs(env.episode_metrics(1.0)["throughput_kbps"] - 3000.0) < 50.0


def test_a_stream_above_the_rate_waits_in_the_sender():
    # Paced at half the stream's rate, the sender's queue grows by 1.5 Mbit/s: the
    # application-level delay grows, which the network's delay does not show.
    env = constant_env("constant:rate=3M", seconds=4.0)
    _, infos = episode(env, 1.5)
    last = infos[-1]
    assert abs(last["app_backlog_bytes"] - 750_000) < 3_000
    assert 1950.0 <= last["app_p50_ms"] <= 2050.0
    assert last["app_within_150ms"] == 0.0
    assert last["self_inflicted_s"] < 0.004
    m = env.app_metrics()
    assert m["delay_p95_ms"] == math.inf
    assert m["delivered_share"] < 0.55


def test_adaptive_video_follows_the_rate_and_episodes_repeat():
    env = constant_env("adaptive:fps=25")
    _, infos = episode(env, 4.0)
    assert abs(env.app_metrics()["offered_kbps"] - 4000.0) < 200.0
    # A step with no completed frame says so with None (and 0 messages).
    empty = [i for i in infos if i["app_p95_ms"] is None]
    assert empty and all(i["app_messages"] == 0 and i["app_within_150ms"] is None for i in empty)
    assert any(i["app_p95_ms"] is not None for i in infos)
    _, again = episode(env, 4.0)
    assert infos == again


def test_bad_app_specs_are_refused():
    with pytest.raises(sprout.BadParameterError, match="unknown kind 'warp'"):
        constant_env("warp")
    with pytest.raises(sprout.BadParameterError, match="rate must be between"):
        constant_env("constant:rate=5")
    with pytest.raises(ValueError):
        constant_env("video:fps=30")
