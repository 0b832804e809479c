"""Sprout (NSDI 2013) from Python: the deterministic simulator of the paper's cellular links.

- ``sprout.simulate(scheme, uplink, downlink, **options)`` runs one scheme over an uplink and a
  downlink trace, with every option of ``sprout sim``, and returns a ``SimResult`` whose
  figures equal ``sprout sim --json``'s exactly (``.to_dict()``, ``.to_pandas()``, per-packet
  ``.records`` as numpy arrays with ``records=True``).
- ``sprout.Trace`` loads, builds or synthesises mahimahi traces (``Trace.load``,
  ``Trace.constant``, ``Trace.synthetic``), with their capacity per interval as numpy.
- ``sprout.evaluate(...)`` runs the paper's evaluation (``sprout eval``) and returns
  results.csv's table as a pandas DataFrame.
- ``sprout.trace_pair(name)`` finds a link's trace files where ``sprout eval`` looks:
  ``$SPROUT_TRACES``, ``./traces``, ``../shared/traces`` (``sprout.trace_dirs()``).
- ``sprout.params(scheme)`` lists Sprout's parameters (``sprout params``), which
  ``params={...}`` changes.

Errors are ``sprout.SproutError`` (a ``ValueError``), with the messages the ``sprout`` command
prints; the subclass says the kind: ``BadParameterError`` (a bad option, parameter or name),
``BadTraceError`` (a trace that does not parse), ``SproutFileNotFoundError`` (also a
``FileNotFoundError``) and ``SproutOSError`` (also an ``OSError``) for files.
"""

from ._sprout import (
    MODERN_SCHEMES,
    SCHEMES,
    BadParameterError,
    BadTraceError,
    SimResult,
    SproutError,
    SproutFileNotFoundError,
    SproutOSError,
    Trace,
    __version__,
    evaluate,
    params,
    simulate,
)
from ._data import trace_dirs, trace_pair

__all__ = [
    "MODERN_SCHEMES",
    "SCHEMES",
    "BadParameterError",
    "BadTraceError",
    "SimResult",
    "SproutError",
    "SproutFileNotFoundError",
    "SproutOSError",
    "Trace",
    "__version__",
    "evaluate",
    "params",
    "simulate",
    "sweep",
    "trace_dirs",
    "trace_pair",
]


def __getattr__(name):
    # sprout.sweep (a callable module: sprout.sweep(spec, ...)) and sprout.gym (needs
    # gymnasium) are imported when first used.
    if name in ("sweep", "gym"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sprout' has no attribute {name!r}")
