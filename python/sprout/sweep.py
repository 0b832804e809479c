"""Sweeps: a grid of simulations (traces x schemes x Sprout parameters x options x seeds) run
on this machine's cores or on a Ray cluster, written as one tidy table (a row per run).

The spec (a TOML file, its text, or a dict of the same shape) is expanded by the same Rust
code as ``sprout sweep SPEC.toml`` (see ``sprout sweep --help`` for its format), and every
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


def _start_ray(address: Optional[str], workers: int):
    """Connects to Ray or starts a local instance; returns (ray module, started here)."""
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("executor='ray' needs Ray: pip install ray") from e
    if ray.is_initialized():
        return ray, False
    quiet = dict(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    if address in (None, "local"):
        ray.init(num_cpus=workers, **quiet)
    elif address == "auto":
        try:
            ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
        except ConnectionError:
            sys.stderr.write(f"no running Ray cluster found; starting a local one ({workers} CPUs)\n")
            ray.init(num_cpus=workers, **quiet)
    else:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    return ray, True


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
    succeeded if any failed.
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

    output = _sprout.SweepOutput(str(csv_path), p.header)
    done = output.done()
    pending = [(i, r) for i, r in zip(p.ids(), p.runs()) if i not in done]
    failures = []
    bar = _Progress(len(pending), progress, f"sweep ({executor})")

    def take(run_id, line, error):
        if line is not None:
            output.append(line)
        else:
            failures.append((run_id, error))
        bar.update()

    try:
        if executor == "local":
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(_sprout.sweep_run, r): i for i, r in pending}
                for f in as_completed(futures):
                    try:
                        take(futures[f], f.result(), None)
                    except _sprout.SproutError as e:
                        take(futures[f], None, str(e))
        else:
            ray, started = _start_ray(ray_address, workers)
            try:
                task = ray.remote(num_cpus=1)(_ray_chunk)
                size = chunk_size or max(1, min(16, -(-len(pending) // (workers * 4))))
                runs = [r for _, r in pending]
                refs = [task.remote(runs[k : k + size]) for k in range(0, len(runs), size)]
                while refs:
                    ready, refs = ray.wait(refs, num_returns=1)
                    for run_id, line, error in ray.get(ready[0]):
                        take(run_id, line, error)
            finally:
                if started:
                    ray.shutdown()
    finally:
        bar.close()
        output.finish()

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
    except (_sprout.SproutError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
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
