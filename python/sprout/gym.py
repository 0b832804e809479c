"""A Gymnasium environment over Sprout's simulated cellular links.

``CellularLinkEnv`` is the simulator's trace-driven link in both directions and its clock,
with a sender whose rate (or window) the agent sets every step. Each step is one or more
20 ms ticks. The observation (float32) is what the sender has heard from the receiver's
latest report, which crosses the reverse link, plus what it knows itself::

    0 delivery_rate_mbps      the report's tick, Mbit/s delivered
    1 delivery_rate_avg_mbps  the same over the last 5 ticks (100 ms)
    2 delay_ms                the delay function at the report (now - send time of the
                              most recently sent packet delivered), ms
    3 min_delay_ms            the smallest one-way delay of the episode so far, ms
    4 loss_rate               packets lost / (delivered + lost) over the last 5 ticks
    5 inflight_kb             sent and not yet reported delivered or lost, kB
    6 send_rate_mbps          what the sender sent in the last step, Mbit/s
    7 report_age_ms           how old the latest report is, ms
    8.. forecast_1..forecast_8  the Sprout receiver's cautious forecast: cumulative
                              MTU-sized packets the link will deliver by the end of each
                              of the next 8 ticks (95% confidence)

The action is a Box of shape (1,): the sending rate in Mbit/s (``action="rate"``) or the
window in kilobytes (``action="window"``). The reward of a step is
``throughput_mbps - reward_weight * self_inflicted_s`` (see ``sprout_sim::rl_env`` for
the exact definitions); ``info`` holds the step's figures. An episode lasts
``episode_seconds`` and ends by truncation. The same seed and the same actions give the
identical episode.

By default the sender always has data (a bulk transfer). With ``app`` (``sprout sim
--app``'s specs: ``"constant:rate=500k"``, ``"video:rate=1M,fps=30"``,
``"adaptive:fps=30"``) an application drives it instead: the sender sends only what the
application has handed it (paced at the rate, or as the window allows), adaptive video sizes
each frame by the rate (or window) the agent sets, and ``info`` adds the application's
figures of the step: ``app_offered_mbps``, ``app_backlog_bytes`` (waiting in the sender),
``app_messages`` (completed in the step) and their application-level delay (creation to
delivery, sender queue included) ``app_p50_ms``, ``app_p95_ms``, ``app_within_150ms`` (None
when no message completed); ``app_metrics()`` gives the episode's. The reward is unchanged
(it sees the network's delay, not the time data waits in the sender): shape your own from
``info`` if the agent should care.

Example::

    import sprout.gym
    env = sprout.gym.CellularLinkEnv(trace="Verizon-LTE-short", episode_seconds=30)
    obs, info = env.reset(seed=1)
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step([4.0])
        done = terminated or truncated
    print(env.episode_metrics())
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import _data, _sprout

__all__ = ["CellularLinkEnv", "DEFAULT_TRACE_DIRS", "resolve_traces", "sprout_forecast_action"]

#: Where a trace pair's name is looked up (after ``traces_dir`` and ``$SPROUT_TRACES``),
#: as ``sprout eval`` does.
DEFAULT_TRACE_DIRS = _data.DEFAULT_TRACE_DIRS


def _find_pair(name: str, traces_dir: Optional[str]):
    return _data.trace_pair(name, traces_dir)


def resolve_traces(trace=None, uplink=None, downlink=None, traces_dir=None):
    """The (uplink, downlink) a ``CellularLinkEnv`` replays, or (None, None) for the synthetic
    link. ``trace`` may be a ``sprout.Trace`` or a file (used both ways), a pair's path prefix
    (``dir/NAME`` with ``dir/NAME.up`` and ``dir/NAME.down``), a pair's name (looked up in
    ``traces_dir``, ``$SPROUT_TRACES``, ``./traces``, ``../shared/traces``) or a tuple
    ``(uplink, downlink)``; ``uplink``/``downlink`` override either direction."""
    up = down = None
    if isinstance(trace, tuple):
        up, down = trace
    elif isinstance(trace, _sprout.Trace):
        up = down = trace
    elif trace is not None:
        p = Path(os.fspath(trace))
        if p.is_file():
            up = down = str(p)
        elif Path(f"{p}.up").is_file() and Path(f"{p}.down").is_file():
            up, down = f"{p}.up", f"{p}.down"
        else:
            up, down = _find_pair(str(trace), traces_dir)
    if uplink is not None:
        up = uplink
    if downlink is not None:
        down = downlink
    if (up is None) != (down is None):
        raise ValueError("give both directions' traces (or a pair), or none for the synthetic link")
    return up, down


class CellularLinkEnv(gym.Env):
    """Gymnasium environment: the agent sets the sending rate (Mbit/s) or window (kB) of a
    flow over a simulated cellular link (see the module docs for the observation).

    Arguments: ``trace``/``uplink``/``downlink`` (see ``resolve_traces``; none = a fresh
    synthetic link of the paper's model each episode, ``synthetic`` = its parameters),
    ``ticks_per_step`` (20 ms ticks per step), ``action`` ("rate" or "window"),
    ``reward_weight`` (per second of self-inflicted delay; default 10), ``throughput_weight``,
    ``loss_weight``, ``episode_seconds``, ``random_start`` (a trace is replayed from a start
    drawn from the seed), ``direction`` of the data ("down" or "up"), ``feedback``
    ("reverse": reports cross the other direction's link; "instant"), ``propagation_delay_ms``,
    ``queue`` ("infinite", "codel", "pie" or "fq-codel"), ``loss``, the link's shaping as
    ``sprout sim``'s flags of the same names spell it, for both directions (the environment has
    one link configuration; None leaves each out): ``buffer`` (a finite queue: "100pkt",
    "200kB", "50ms" at the mean rate, ",head" for drop-head), ``gemodel`` (Gilbert-Elliott
    bursty loss, "P,R[,1-H[,1-K]]" such as "1%,30%"), ``jitter`` ("5ms" or "5ms,reorder"),
    ``delay_trace`` (a file of delays over time, replacing ``propagation_delay_ms``), ``ecn``
    (the AQMs mark instead of dropping ECN-capable packets; the agent's own packets are not
    ECN-capable), ``l4s_step`` (ECT(1) packets queued longer than this are marked, e.g. "1ms"),
    ``codel_target``, ``codel_interval`` (times), ``fq_quantum``, ``fq_flows`` (ints), a bad
    value raising ValueError naming it; ``max_rate_mbps`` / ``max_window_kb`` (the
    action's upper bound), ``params`` (Sprout parameters of the receiver's model,
    ``"KEY=VALUE"``), ``confidence``, ``app`` (what drives the sender: ``"bulk"`` or an
    application spec, see the module docs). The seed is given to ``reset(seed=...)``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        trace: Any = None,
        uplink: Any = None,
        downlink: Any = None,
        *,
        ticks_per_step: int = 1,
        action: str = "rate",
        reward_weight: float = 10.0,
        throughput_weight: float = 1.0,
        loss_weight: float = 0.0,
        episode_seconds: float = 30.0,
        random_start: bool = True,
        direction: str = "down",
        feedback: str = "reverse",
        propagation_delay_ms: float = 20.0,
        queue: str = "infinite",
        loss: float = 0.0,
        max_rate_mbps: float = 48.0,
        max_window_kb: float = 2000.0,
        synthetic: Optional[dict] = None,
        params: Any = (),
        confidence: Optional[float] = None,
        app: str = "bulk",
        traces_dir: Optional[str] = None,
        render_mode: Optional[str] = None,
        buffer: Optional[str] = None,
        gemodel: Optional[str] = None,
        jitter: Optional[str] = None,
        delay_trace: Optional[Union[str, os.PathLike]] = None,
        ecn: Optional[bool] = None,
        l4s_step: Optional[str] = None,
        codel_target: Optional[str] = None,
        codel_interval: Optional[str] = None,
        fq_quantum: Optional[int] = None,
        fq_flows: Optional[int] = None,
    ):
        super().__init__()
        if render_mode is not None:
            raise ValueError("CellularLinkEnv has no render modes")
        up, down = resolve_traces(trace, uplink, downlink, traces_dir)
        link = dict(
            buffer=buffer,
            gemodel=gemodel,
            jitter=jitter,
            delay_trace=delay_trace,
            ecn=ecn,
            l4s_step=l4s_step,
            codel_target=codel_target,
            codel_interval=codel_interval,
            fq_quantum=fq_quantum,
            fq_flows=fq_flows,
        )
        self.engine = _sprout.Env(
            uplink=up,
            downlink=down,
            synthetic=synthetic,
            direction=direction,
            ticks_per_step=ticks_per_step,
            action=action,
            reward_weight=reward_weight,
            throughput_weight=throughput_weight,
            loss_weight=loss_weight,
            episode_seconds=episode_seconds,
            random_start=random_start,
            feedback=feedback,
            propagation_delay_ms=propagation_delay_ms,
            queue=queue,
            loss=loss,
            max_rate_mbps=max_rate_mbps,
            max_window_kb=max_window_kb,
            params=list(params),
            confidence=confidence,
            app=app,
            **{k: v for k, v in link.items() if v is not None},
        )
        self.action_kind = action
        n = len(self.engine.observation_names)
        self.observation_space = spaces.Box(
            low=0.0, high=np.inf, shape=(n,), dtype=np.float32
        )
        lo, hi = self.engine.action_bounds
        self.action_space = spaces.Box(
            low=np.float32(lo), high=np.float32(hi), shape=(1,), dtype=np.float32
        )
        self.observation_names = list(self.engine.observation_names)
        self.render_mode = None
        self._step = self.engine.step

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        """Starts an episode. With ``seed``, Gymnasium's generator is reseeded; the engine's
        seed is drawn from it (so the same seed gives the same episode, and later resets
        without a seed a reproducible sequence). ``info`` has ``seed`` (the engine's) and
        ``start_s`` (where the trace replay starts)."""
        super().reset(seed=seed)
        engine_seed = int(self.np_random.integers(0, 2**63 - 1))
        obs = self.engine.reset(engine_seed)
        return obs, {"seed": engine_seed, "start_s": self.engine.start_s}

    def step(self, action):
        """One step: ``action`` is a number or a sequence/array whose first entry is the rate
        (Mbit/s) or window (kB); clipped to the action space. Returns Gymnasium's
        ``(observation, reward, terminated, truncated, info)``."""
        if type(action) is not float:
            action = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
        return self._step(action)

    def episode_metrics(self, skip_s: float = 0.0) -> dict:
        """The paper's metrics of the episode so far (data direction, from ``skip_s`` on): the
        same dict as ``sprout.simulate``'s per-direction metrics (throughput_kbps,
        p95_delay_ms, self_inflicted_ms, utilization, ...)."""
        return self.engine.episode_metrics(skip_s)

    def app_metrics(self, skip_s: float = 0.0) -> Optional[dict]:
        """The application-level figures of the episode so far (from ``skip_s`` on):
        offered_kbps, delivered_kbps, delivered_share, messages, delay_p50_ms, delay_p95_ms,
        delay_p99_ms, within_100ms, within_150ms, within_300ms (a message not yet delivered
        counts as infinitely late); None for a bulk sender."""
        return self.engine.app_metrics(skip_s)

    def arrivals(self) -> dict:
        """Every data packet delivered in the episode: numpy arrays ``sent_us``, ``arrived_us``
        (µs since the episode's start) and ``bytes``."""
        return self.engine.arrivals()

    def close(self):
        pass


def sprout_forecast_action(obs, action: str = "rate", target_ticks: int = 5, skip_ticks: int = 1):
    """A baseline policy that follows the Sprout forecast in an observation, with Sprout's
    window rule: the packets the forecast says the link will deliver over ``target_ticks``
    ticks after the first ``skip_ticks`` (Sprout's 100 ms after the tick in progress), as a
    window in kB (``action="window"``: the bytes the sender keeps in flight, which plays the
    part of Sprout's queue estimate) or as a rate over those ticks in Mbit/s (``"rate"``;
    note that a sender paced at its own cautious forecast only ever shows the model what it
    sent, so it tends to starve itself: Sprout's bursts are what let its forecast grow)."""
    f = obs[8:]
    lo = float(f[skip_ticks - 1]) if skip_ticks > 0 else 0.0
    hi = float(f[min(skip_ticks + target_ticks, len(f)) - 1])
    packets = max(hi - lo, 0.0)
    if action == "rate":
        return packets * 1500 * 8 / (target_ticks * 0.02) / 1e6
    return packets * 1.5


gym.register(id="sprout/CellularLink-v0", entry_point="sprout.gym:CellularLinkEnv")
