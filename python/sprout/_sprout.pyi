"""Type stubs of ``sprout._sprout``, the compiled core of the ``sprout`` package.

Units: times in the records are microseconds (``_us``), trace times milliseconds (``_ms``),
option times seconds (``duration``, ``skip``) unless a name says otherwise; rates in the
metrics are kbit/s, in ``Trace.capacity`` Mbit/s.
"""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union, final

import numpy as np
import numpy.typing as npt

__version__: str

SCHEMES: List[str]
"""Every scheme's key, in the order tables list them (``omniscient`` is computed, not simulated)."""

MODERN_SCHEMES: List[str]
"""Modern peers run only on request, never by default: ``copa`` (delta 0.5), ``copa-0.1``."""

PathLike = Union[str, "os.PathLike[str]"]
TraceLike = Union["Trace", str, "os.PathLike[str]"]
Params = Union[Mapping[str, Any], Sequence[str], None]

class SproutError(ValueError):
    """An error of the simulator, with the message the ``sprout`` command prints after
    ``error:``; its subclasses say the kind."""

class BadParameterError(SproutError):
    """A bad option, parameter or configuration (out of range, unknown, options that do not
    go together), or an unknown scheme, queue or load."""

class BadTraceError(SproutError):
    """A trace that does not parse: a line that is not a non-negative integer, times going
    backwards, no opportunity at all."""

class SproutFileNotFoundError(SproutError, FileNotFoundError):
    """A file that does not exist (a trace, a traces folder, a log's folder)."""

class SproutOSError(SproutError, OSError):
    """Another failure to read or write a file (a folder given as a trace, a permission)."""

@final
class Trace:
    """A mahimahi trace: the times (ms since the start) of its 1500-byte delivery
    opportunities. Immutable, comparable with ``==``, picklable."""

    @staticmethod
    def load(path: PathLike) -> "Trace":
        """Loads a trace file; its name is the file name. SproutFileNotFoundError /
        SproutOSError when it cannot be read, BadTraceError when it does not parse."""
    @staticmethod
    def constant(mbit: float, seconds: float, name: Optional[str] = None) -> "Trace":
        """A constant-rate trace: ``mbit`` Mbit/s for ``seconds`` s, evenly spaced, the last
        opportunity at the end. Name defaults to ``constant-{mbit}mbit``."""
    @staticmethod
    def synthetic(
        seed: int = 1,
        seconds: float = 60.0,
        *,
        start_rate: float = 400.0,
        sigma: float = 200.0,
        outage_escape_rate: float = 1.0,
        max_rate: float = 1000.0,
        resume_rate: float = 100.0,
        name: Optional[str] = None,
    ) -> "Trace":
        """A trace from the paper's stochastic link model (rates in packets/s, sigma in
        packets/s per sqrt(s), escape rate per s), seeded and deterministic. Name defaults to
        ``synthetic-{seed}``."""
    @staticmethod
    def from_opportunities(
        opportunities_ms: Union[Sequence[int], npt.NDArray[np.integer[Any]]], name: str = "trace"
    ) -> "Trace":
        """A trace from non-decreasing opportunity times in ms (at least one)."""
    @staticmethod
    def parse(text: str, name: str = "trace") -> "Trace":
        """A trace from a mahimahi file's text."""
    @property
    def name(self) -> str:
        """The trace's name (the file name for a loaded trace)."""
    @property
    def duration_s(self) -> float:
        """Length in seconds: the last timestamp (mahimahi's loop period)."""
    @property
    def mean_mbps(self) -> float:
        """Mean capacity of one pass, Mbit/s."""
    @property
    def opportunities_ms(self) -> npt.NDArray[np.uint64]:
        """The opportunity times, ms, as a uint64 array (a copy)."""
    def capacity(self, interval_ms: int = 1000) -> npt.NDArray[np.float64]:
        """Capacity in Mbit/s of each interval ``[k*interval_ms, (k+1)*interval_ms)`` over
        ``[0, duration)``; the last interval is divided by its own length."""
    def save(self, path: PathLike) -> None:
        """Writes the trace as a mahimahi file."""
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

@final
class SimResult:
    """``sprout sim --json``'s figures for both directions of one simulation."""

    def to_dict(self) -> Dict[str, Any]:
        """The result as ``sprout sim --json`` gives it, as Python objects."""
    def to_json(self) -> str:
        """Exactly ``sprout sim --json``'s output (without the final newline)."""
    def to_pandas(self) -> Any:
        """A pandas DataFrame with a row per direction (uplink, downlink) and a column per
        metric."""
    def records_to_pandas(self) -> Any:
        """The per-packet records as a pandas DataFrame (needs ``records=True``)."""
    def keys(self) -> List[str]:
        """The top-level keys of ``to_dict()``."""
    def __getitem__(self, key: str) -> Any: ...
    def __contains__(self, key: str) -> bool: ...
    @property
    def scheme(self) -> str:
        """The scheme's key."""
    @property
    def duration_s(self) -> float:
        """Simulated seconds."""
    @property
    def app_spec(self) -> str:
        """The application's canonical spec ("bulk", "constant:rate=500k,packet=1200", ...)."""
    @property
    def app(self) -> Dict[str, Optional[Dict[str, Any]]]:
        """Application-level figures per direction (uplink, downlink): offered_kbps,
        delivered_kbps, delivered_share, messages, delay_p50_ms, delay_p95_ms, delay_p99_ms
        (None when infinite), within_100ms, within_150ms, within_300ms; None for a bulk
        sender or a direction without data."""
    @property
    def uplink(self) -> Dict[str, Any]:
        """The uplink's metrics (throughput_kbps, p95_delay_ms, self_inflicted_ms, ...)."""
    @property
    def downlink(self) -> Dict[str, Any]:
        """The downlink's metrics."""
    @property
    def records(self) -> Optional[Dict[str, npt.NDArray[Any]]]:
        """With ``records=True``: ``sent_us``, ``arrived_us`` (uint64), ``bytes``,
        ``app_bytes`` (uint32), ``is_data`` (bool), ``direction`` (str: up/down), uplink
        packets then downlink packets in arrival order; else None."""

def simulate(
    scheme: str,
    uplink: TraceLike,
    downlink: TraceLike,
    *,
    confidence: Optional[float] = None,
    params: Params = None,
    seed: int = 0,
    host_jitter_ms: float = 1.0,
    loss: float = 0.0,
    queue: str = "infinite",
    uplink_queue: Optional[str] = None,
    downlink_queue: Optional[str] = None,
    uplink_loss: Optional[float] = None,
    downlink_loss: Optional[float] = None,
    duration: Optional[float] = None,
    skip: float = 60.0,
    load: str = "both",
    app: str = "bulk",
    cross: Optional[str] = None,
    ecn: bool = False,
    uplink_log: Optional[PathLike] = None,
    downlink_log: Optional[PathLike] = None,
    records: bool = False,
    buffer: Optional[str] = None,
    uplink_buffer: Optional[str] = None,
    downlink_buffer: Optional[str] = None,
    gemodel: Optional[str] = None,
    uplink_gemodel: Optional[str] = None,
    downlink_gemodel: Optional[str] = None,
    jitter: Optional[str] = None,
    uplink_jitter: Optional[str] = None,
    downlink_jitter: Optional[str] = None,
    delay_trace: Optional[PathLike] = None,
    uplink_delay_trace: Optional[PathLike] = None,
    downlink_delay_trace: Optional[PathLike] = None,
    l4s_step: Optional[str] = None,
    codel_target: Optional[str] = None,
    codel_interval: Optional[str] = None,
    fq_quantum: Optional[int] = None,
    fq_flows: Optional[int] = None,
) -> SimResult:
    """Simulates one scheme over an uplink and a downlink trace as ``sprout sim`` does (every
    option, same defaults); the figures equal ``sprout sim --json``'s. Runs without the GIL.
    The link's shaping options are ``sprout sim``'s flags of the same names (``_`` for ``-``)
    with their spellings: ``buffer="100pkt"``, ``gemodel="1%,30%"``, ``jitter="5ms,reorder"``,
    ``delay_trace=PATH``, ``l4s_step="1ms"``, ...; a bad value is a BadParameterError naming
    it."""

def evaluate(
    traces: Optional[PathLike] = None,
    schemes: Union[Sequence[str], str, None] = None,
    experiments: Union[Sequence[str], str, None] = None,
    out: Optional[PathLike] = None,
    skip: float = 60.0,
    jobs: Optional[int] = None,
    params: Params = None,
    progress: bool = False,
) -> Any:
    """Runs the paper's evaluation (``sprout eval``), writes its outputs into ``out`` and
    returns results.csv's table as a pandas DataFrame (``attrs["summary"]``: the summary)."""

def params(scheme: str = "sprout", params: Params = None) -> Dict[str, Any]:
    """A Sprout scheme's configuration (``sprout params``), with ``params`` applied."""

@final
class Env:
    """A Sprout-style cellular link as a reinforcement-learning environment, stepped from
    Python (``sprout.gym.CellularLinkEnv`` wraps it). One step is ``ticks_per_step`` ticks of
    20 ms; the action is a sending rate (Mbit/s) or a window (kB), per ``action``."""

    def __new__(
        cls,
        *,
        uplink: Optional[TraceLike] = None,
        downlink: Optional[TraceLike] = None,
        synthetic: Optional[Dict[str, Any]] = None,
        direction: str = "down",
        ticks_per_step: int = 1,
        action: str = "rate",
        reward_weight: float = 10.0,
        throughput_weight: float = 1.0,
        loss_weight: float = 0.0,
        episode_seconds: float = 30.0,
        random_start: bool = True,
        feedback: str = "reverse",
        propagation_delay_ms: float = 20.0,
        queue: str = "infinite",
        loss: float = 0.0,
        max_rate_mbps: float = 48.0,
        max_window_kb: float = 2000.0,
        packet_bytes: int = 1500,
        feedback_bytes: int = 100,
        params: Sequence[str] = ...,
        confidence: Optional[float] = None,
        app: str = "bulk",
        buffer: Optional[str] = None,
        gemodel: Optional[str] = None,
        jitter: Optional[str] = None,
        delay_trace: Optional[PathLike] = None,
        ecn: Optional[bool] = None,
        l4s_step: Optional[str] = None,
        codel_target: Optional[str] = None,
        codel_interval: Optional[str] = None,
        fq_quantum: Optional[int] = None,
        fq_flows: Optional[int] = None,
    ) -> "Env":
        """The link's shaping options are ``sprout sim``'s of the same names, for both
        directions (``uplink_*``/``downlink_*`` are refused: one link configuration)."""
    def reset(self, seed: int) -> npt.NDArray[np.float32]:
        """Starts an episode; returns the first observation."""
    def step(
        self, action: float
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, Dict[str, float]]:
        """(observation, reward, terminated, truncated, info), as Gymnasium's ``step``."""
    def bench(self, steps: int, action: float, seed: int = 0) -> float:
        """Steps per second over ``steps`` steps of a constant action, without the GIL."""
    def observation(self) -> npt.NDArray[np.float32]: ...
    def episode_metrics(self, skip_s: float = 0.0) -> Dict[str, float]:
        """The episode's throughput (kbit/s) and delays (ms), as ``sprout sim``'s metrics."""
    def app_metrics(self, skip_s: float = 0.0) -> Optional[Dict[str, float]]:
        """The episode's application-level figures (None for a bulk sender)."""
    def arrivals(self) -> Dict[str, npt.NDArray[Any]]: ...
    @property
    def app(self) -> str:
        """The application's canonical spec ("bulk", "constant:rate=500k,packet=1200", ...)."""
    @property
    def observation_names(self) -> List[str]: ...
    @property
    def action_bounds(self) -> tuple[float, float]: ...
    @property
    def episode_steps(self) -> int: ...
    @property
    def step_s(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def start_s(self) -> float: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def steps(self) -> int: ...
    @property
    def trace_name(self) -> str: ...

@final
class SweepPlan:
    """A sweep's grid (``sprout sweep``'s TOML or JSON), expanded into runs."""

    @staticmethod
    def load(path: PathLike) -> "SweepPlan": ...
    @staticmethod
    def from_toml(text: str, base_dir: PathLike = ".", name: str = "sweep") -> "SweepPlan": ...
    @staticmethod
    def from_json(text: str, base_dir: PathLike = ".", name: str = "sweep") -> "SweepPlan": ...
    def runs(self) -> List[str]:
        """Every run, as JSON (the input of ``sweep_run``)."""
    def ids(self) -> List[str]: ...
    @property
    def header(self) -> List[str]: ...
    @property
    def out(self) -> Optional[str]: ...
    @property
    def name(self) -> str: ...
    def __len__(self) -> int: ...

@final
class SweepOutput:
    """A sweep's output file: whole lines appended, resumable, sorted by ``finish()``."""

    def __new__(cls, path: PathLike, header: List[str]) -> "SweepOutput": ...
    def done(self) -> set[str]:
        """Run ids already in the file."""
    def append(self, line: str) -> None: ...
    def finish(self) -> int:
        """Sorts the rows by run id; returns their number."""

def sweep_run(run_json: str) -> str:
    """Runs one sweep run (JSON from ``SweepPlan.runs``); returns its CSV line."""

def sweep_run_many(runs: List[str]) -> List[tuple[str, Optional[str], Optional[str]]]:
    """``[(run_id, line or None, error or None), ...]`` in order."""

# The sans-IO cores of ``sprout.transport`` (its asyncio layer is the public API). Times are
# microseconds on the caller's monotonic clock (the event loop's); keys 32 raw bytes.

TransportMessage = tuple[bytes, int, int, bool]
"""A received message: (payload, seq, sent_us, is_data)."""

@final
class _TransportClient:
    """The client side of one secure Sprout connection (libsprout's ``Conn``); one thread."""

    def __new__(cls, key: bytes, server_key: bytes, greeting: bytes, now_us: int) -> "_TransportClient": ...
    def feed(self, now_us: int, datagram: bytes) -> None: ...
    def on_timeout(self, now_us: int) -> None: ...
    def transmit(self, now_us: int) -> List[bytes]: ...
    def deadline(self) -> Optional[int]: ...
    def send(self, sent_us: int, payload: bytes) -> None: ...
    def recv(self) -> Optional[TransportMessage]: ...
    def send_bye(self) -> None: ...
    def events(self) -> List[str]: ...
    def state(self) -> str: ...
    def end_reason(self) -> Optional[str]: ...
    def max_message(self) -> int: ...
    def forecast(self) -> List[int]: ...
    def stats(self, now_us: int) -> Dict[str, Any]: ...
    def close(self, now_us: int) -> None: ...

@final
class _TransportListener:
    """The server side of many sessions on one socket (libsprout's ``Listener``); one thread."""

    def __new__(cls, key: bytes, allowed: Optional[List[bytes]], now_us: int, max_sessions: int,
                max_sessions_per_source: int, max_sessions_per_key: int, idle_timeout_s: float,
                accept_backlog: int) -> "_TransportListener": ...
    def public_key(self) -> bytes: ...
    def feed(self, now_us: int, host: str, port: int, datagram: bytes) -> None: ...
    def on_timeout(self, now_us: int) -> None: ...
    def transmit(self, now_us: int) -> List[tuple[bytes, str, int]]: ...
    def deadline(self) -> Optional[int]: ...
    def accept(self) -> Optional[tuple[int, bytes, bytes, str, int]]:
        """The next new session: (id, client public key, greeting, host, port)."""
    def ready(self) -> List[int]: ...
    def send(self, id: int, sent_us: int, payload: bytes) -> None: ...
    def send_raw(self, id: int, message: bytes) -> None: ...
    def recv(self, id: int) -> Optional[TransportMessage]: ...
    def state(self, id: int) -> str: ...
    def end_reason(self, id: int) -> Optional[str]: ...
    def forecast(self, id: int) -> List[int]: ...
    def stats(self, id: int, now_us: int) -> Dict[str, Any]: ...
    def close(self, id: int, now_us: int) -> None: ...
    def release(self, id: int, now_us: int) -> None: ...
    def server_stats(self) -> Dict[str, Any]: ...

def _transport_generate_key() -> bytes: ...
def _transport_public_key(key: bytes) -> bytes: ...
def _transport_hello(direction: str, rate_kbps: int, duration_ms: int, payload_bytes: int,
                     session: int) -> bytes: ...
def _transport_decode(message: bytes) -> Optional[Dict[str, Any]]: ...
