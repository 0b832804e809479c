"""Environment steps per second on one core: single-tick steps (20 ms of simulated link each)
of sprout.gym.CellularLinkEnv, through Gymnasium's API from Python, through the engine's
step from Python, and in Rust alone (Env.bench, no Python per step).

    python python/benchmarks/env_steps.py [--steps N] [--trace DIR/NAME]

Target: at least 20,000 single-tick steps per second.
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

import sprout.gym as sg
from sprout import _sprout

REPO = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trace", default=str(REPO.parent / "shared" / "traces" / "Verizon-LTE-short"))
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    if Path(f"{a.trace}.up").is_file():
        up, down = _sprout.Trace.load(f"{a.trace}.up"), _sprout.Trace.load(f"{a.trace}.down")
        what = Path(a.trace).name
    else:
        up, down = _sprout.Trace.synthetic(seed=1, seconds=300), _sprout.Trace.synthetic(seed=2, seconds=300)
        what = "a synthetic link (no traces found)"
    print(f"single-tick steps on one core, {what}, {a.steps} steps, median of {a.repeats}")

    def env(action="rate"):
        return sg.CellularLinkEnv(uplink=up, downlink=down, episode_seconds=60.0, action=action)

    def gym_loop(e, act):
        e.reset(seed=1)
        t = time.perf_counter()
        for _ in range(a.steps):
            _, _, _, trunc, _ = e.step(act)
            if trunc:
                e.reset()
        return time.perf_counter() - t

    def engine_loop(e, act):
        eng = e.engine
        eng.reset(1)
        step = eng.step
        t = time.perf_counter()
        for _ in range(a.steps):
            if step(act)[3]:
                eng.reset(1)
        return time.perf_counter() - t

    rows = [
        ("Rust engine alone (Env.bench)", lambda: env().engine.bench(a.steps, 4.0, 1)),
        ("engine.step from Python", lambda: engine_loop(env(), 4.0)),
        ("CellularLinkEnv.step(float)", lambda: gym_loop(env(), 4.0)),
        ("CellularLinkEnv.step(np.array)", lambda: gym_loop(env(), np.array([4.0], np.float32))),
        ("window action, step(np.array)", lambda: gym_loop(env("window"), np.array([30.0], np.float32))),
    ]
    for name, f in rows:
        secs = statistics.median(f() for _ in range(a.repeats))
        print(f"  {name:34s} {a.steps / secs:9,.0f} steps/s  ({secs / a.steps * 1e6:5.1f} us/step)")


if __name__ == "__main__":
    main()
