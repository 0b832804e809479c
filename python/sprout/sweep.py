"""Sweeps: a grid of simulations (traces x schemes x Sprout parameters x options x seeds) run
on this machine's cores or on a Ray cluster, written as one tidy table (a row per run).

The spec (a TOML file, its text, or a dict of the same shape) is expanded by the same Rust
code as ``sprout sweep SPEC.toml`` (see ``sprout sweep --help`` for its format; besides
``sprout sim``'s options, its ``[sim]`` table takes the link's shaping as ``sprout.simulate``
spells it: ``ecn``, ``l4s_step = ["1ms", "5ms"]``, ``buffer``, ``gemodel``, ``jitter``,
``codel_target``, ``codel_interval``, ``fq_quantum``, ``fq_flows`` and the ``uplink_``/
``downlink_`` buffers, gemodels and jitters, each a column of the rows, which then count each
direction's buffer drops and losses (the ECN ones its marks)), and every
run goes through the same Rust function (``_sprout.sweep_run``, the GIL released), so the
rows are identical whichever executor ran them. Rows are appended to a CSV as runs finish
(one whole line per write); a sweep started again on the same output skips the runs already
in it; at the end the file is rewritten sorted by run id. With ``out="....parquet"`` the CSV
(same name, ``.csv``) is kept for resuming and converted to Parquet at the end (pandas and
pyarrow needed).

Command line: ``python -m sprout.sweep SPEC.toml [--out FILE] [--workers N]
[--ray auto|local|ADDRESS] [--quiet]`` (``sprout sweep --ray`` runs this).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Optional, Union

from . import _sprout

__all__ = ["sweep", "plan", "SweepError"]


class SweepError(_sprout.SproutError):
    """Some runs of a sweep failed (the others' rows are written; starting the sweep again
    runs only the failed ones). ``failures`` lists ``(run, message)``."""

    def __init__(self, failures):
        self.failures = list(failures)
        lines = "\n  ".join(f"{r}: {m}" if r else m for r, m in self.failures[:20])
        more = f"\n  ... and {len(self.failures) - 20} more" if len(self.failures) > 20 else ""
        super().__init__(f"{len(self.failures)} runs failed:\n  {lines}{more}")


def plan(spec: Union[str, os.PathLike, dict]) -> "_sprout.SweepPlan":
    """The expanded runs of ``spec``: a TOML file's path, TOML text, or a dict (paths in a
    dict or text relative to the current folder)."""
    if isinstance(spec, dict):
        return _sprout.SweepPlan.from_json(json.dumps(spec), ".", "sweep")
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        if "\n" not in text and Path(text).is_file():
            return _sprout.SweepPlan.load(text)
        if "=" in text:
            return _sprout.SweepPlan.from_toml(text, ".", "sweep")
        raise FileNotFoundError(f"no sweep spec {text}")
    raise TypeError(f"spec must be a path, TOML text or a dict, not {type(spec).__name__}")


class _Progress:
    """A one-line progress bar on stderr (nothing when disabled)."""

    def __init__(self, total: int, enabled: bool, label: str):
        self.total, self.done, self.enabled, self.label = total, 0, enabled and total > 0, label
        self.start = time.monotonic()
        self.last = 0.0

    def update(self, n: int = 1):
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.2 or self.done == self.total):
            self.last = now
            width = 30
            fill = int(width * self.done / self.total)
            sys.stderr.write(
                f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] "
                f"{self.done}/{self.total} runs, {now - self.start:.1f} s"
            )
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _ray_chunk(runs):
    """A Ray task: runs a chunk of runs in this worker (through the Rust binding)."""
    from sprout import _sprout as native

    return native.sweep_run_many(runs)


#: What to install for each optional part (the extras of python/pyproject.toml).
_INSTALL = {"ray": "pip install './python[ray]'", "parquet": "pip install './python[parquet]'"}


def _require(modules, what: str, extra: str):
    """Imports ``modules`` or raises ImportError naming what to install for ``what``."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ImportError(
                f"{what} needs {name}, which is not installed in {sys.executable} ({e}): "
                f"{_INSTALL[extra]} (in the repository; or pip install 'sprout[{extra}]')"
            ) from None


def _check_reachable(address: str, timeout_s: float = 10.0):
    """Raises ConnectionError if nothing accepts a connection at ``address`` (HOST:PORT) within
    ``timeout_s`` seconds (Ray itself would wait for minutes)."""
    import socket

    host, sep, port = address.rpartition(":")
    if "://" in address or not sep or not port.isdigit():
        return  # a Ray client address, or one Ray parses itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(f"no Ray cluster answers at {address} ({e})") from None


def _start_ray(address: Optional[str], workers: int):
    """Connects to Ray or starts a local instance; returns (ray module, started here).
    Raises ImportError (Ray is not installed) or ConnectionError (no cluster at
    ``address``), each with a one-line message."""
    _require(["ray"], "executor='ray' (sprout sweep --ray)", "ray")
    import ray

    if ray.is_initialized():
        return ray, False
    quiet = dict(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    if address in (None, "local"):
        # address="local": a new instance even if another cluster runs on this machine.
        ray.init(address="local", num_cpus=workers, **quiet)
        return ray, True
    if address == "auto":
        try:
            ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
        except ConnectionError:
            sys.stderr.write(f"no running Ray cluster found; starting a local one ({workers} CPUs)\n")
            ray.init(address="local", num_cpus=workers, **quiet)
        return ray, True
    _check_reachable(address)
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ConnectionError(f"could not join the Ray cluster at {address}: {first}") from None
    return ray, True


def _run_local(pending, workers: int, take):
    """Runs ``pending`` ((run id, run) pairs) on a pool of ``workers`` threads."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_sprout.sweep_run, r): i for i, r in pending}
        for f in as_completed(futures):
            try:
                take(futures[f], f.result(), None)
            except _sprout.SproutError as e:
                take(futures[f], None, str(e))


def _run_ray(ray, pending, workers: int, chunk_size: Optional[int], take):
    """Runs ``pending`` as Ray tasks of ``chunk_size`` runs. A task whose node dies is run
    again elsewhere (Ray's retries; its rows are the same), and each task's rows are taken
    once, when its result arrives."""
    cpus = int(ray.cluster_resources().get("CPU", workers)) or workers
    size = chunk_size or max(1, min(16, -(-len(pending) // (cpus * 4))))
    task = ray.remote(num_cpus=1, max_retries=10)(_ray_chunk)
    runs = [r for _, r in pending]
    refs = [task.remote(runs[k : k + size]) for k in range(0, len(runs), size)]
    while refs:
        ready, refs = ray.wait(refs, num_returns=1)
        for run_id, line, error in ray.get(ready[0]):
            take(run_id, line, error)


def sweep(
    spec: Union[str, os.PathLike, dict],
    out: Optional[Union[str, os.PathLike]] = None,
    *,
    executor: str = "local",
    ray_address: Optional[str] = None,
    workers: Optional[int] = None,
    chunk_size: Optional[int] = None,
    progress: bool = True,
):
    """Runs a sweep and returns its table (a pandas DataFrame sorted by run id if pandas is
    installed, else the output's path).

    ``spec``: a TOML file, TOML text or a dict (see ``sprout sweep --help``). ``out``: the
    output, ``.csv`` or ``.parquet`` [default: the spec's ``out``, else its name + ``.csv``].
    ``executor``: "local" (a pool of ``workers`` threads in this process, each run in Rust
    with the GIL released) or "ray" (Ray tasks of ``chunk_size`` runs each: on the cluster at
    ``ray_address``, "auto" for the running cluster (else a local instance), or, with None or
    "local", a local instance with ``num_cpus=workers``; a cluster's nodes need the
    ``sprout`` package and the spec's trace files at the same paths). ``workers`` defaults
    to the number of cores. Raises ``SweepError`` after writing the rows of the runs that
    succeeded if any failed; ImportError (before writing anything) if Ray, or for Parquet
    pandas and pyarrow, are missing. If the sweep stops (an error, a lost cluster), the rows
    of the runs that finished are kept and running it again runs only the others.
    """
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', not {executor!r}")
    p = plan(spec)
    if out is None:
        out = p.out if p.out is not None else f"{p.name}.csv"
    out = Path(os.fspath(out))
    parquet = out.suffix == ".parquet"
    csv_path = out.with_suffix(".csv") if parquet else out
    workers = int(workers) if workers else (os.cpu_count() or 1)
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if parquet:
        _require(["pandas", "pyarrow"], f"writing {out.name} (Parquet)", "parquet")
    # Ray first: a missing Ray or an unreachable cluster leaves the output untouched.
    ray, started = _start_ray(ray_address, workers) if executor == "ray" else (None, False)
    try:
        failures = _run_into(p, csv_path, executor, ray, workers, chunk_size, progress)
    finally:
        if started:
            ray.shutdown()

    if parquet:
        import pandas as pd

        pd.read_csv(csv_path, keep_default_na=False, na_values=[""]).to_parquet(out, index=False)
    if failures:
        raise SweepError(failures)
    try:
        import pandas as pd
    except ImportError:
        return str(out)
    if parquet:
        return pd.read_parquet(out)
    return pd.read_csv(csv_path, keep_default_na=False, na_values=[""])


def _run_into(p, csv_path: Path, executor: str, ray, workers: int, chunk_size, progress: bool):
    """Runs the plan's runs not yet in ``csv_path``, appending a row per run (once per run
    id) as each finishes; the file is sorted at the end, even after an error. Returns the
    failures ((run id, message))."""
    output = _sprout.SweepOutput(str(csv_path), p.header)
    written = set(output.done())
    pending = [(i, r) for i, r in zip(p.ids(), p.runs()) if i not in written]
    failures = []
    bar = _Progress(len(pending), progress, f"sweep ({executor})")

    def take(run_id, line, error):
        if line is not None:
            if run_id not in written:
                written.add(run_id)
                output.append(line)
        else:
            failures.append((run_id, error))
        bar.update()

    try:
        if executor == "local":
            _run_local(pending, workers, take)
        else:
            _run_ray(ray, pending, workers, chunk_size, take)
    finally:
        bar.close()
        output.finish()
    return failures


def main(argv=None) -> int:
    """``python -m sprout.sweep``: the command line of ``sweep``."""
    ap = argparse.ArgumentParser(
        prog="python -m sprout.sweep",
        description="Run a sweep (a TOML spec; see `sprout sweep --help`) locally or on Ray.",
    )
    ap.add_argument("spec", help="the sweep's TOML spec")
    ap.add_argument("--out", help="output .csv or .parquet [default: the spec's out, else SPEC.csv]")
    ap.add_argument("--workers", type=int, help="threads (local) or Ray CPUs [default: all cores]")
    ap.add_argument(
        "--ray",
        metavar="auto|local|ADDRESS",
        help="run as Ray tasks: on the running cluster (auto, else a local instance), "
        "a new local instance (local), or the cluster at ADDRESS",
    )
    ap.add_argument("--chunk-size", type=int, help="runs per Ray task [default: automatic]")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    t = time.monotonic()
    try:
        result = sweep(
            a.spec,
            a.out,
            executor="ray" if a.ray else "local",
            ray_address=a.ray,
            workers=a.workers,
            chunk_size=a.chunk_size,
            progress=not a.quiet,
        )
    except (_sprout.SproutError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a Ray error mid-sweep (e.g. the cluster went away)
        if not a.ray:
            raise
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"error: the sweep stopped ({type(e).__name__}: {first}); the rows of the runs "
              "that finished are kept: run it again to run the others", file=sys.stderr)
        return 1
    rows = len(result) if not isinstance(result, str) else "?"
    print(f"{rows} rows in {time.monotonic() - t:.1f} s")
    return 0


class _CallableModule(types.ModuleType):
    """``sprout.sweep`` is this module and also callable: ``sprout.sweep(spec, ...)`` is
    ``sprout.sweep.sweep(spec, ...)``."""

    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
