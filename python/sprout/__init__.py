"""Sprout (NSDI 2013) from Python: the deterministic simulator of the paper's cellular links.

``sprout.simulate`` runs one scheme over an uplink and a downlink trace (the figures of
``sprout sim --json``), ``sprout.Trace`` loads or synthesises mahimahi traces, and
``sprout.evaluate`` runs the paper's evaluation (``sprout eval``) and returns its table.
"""

from . import _sprout
from ._sprout import __version__

__all__ = ["__version__"]
