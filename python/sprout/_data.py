"""Where the paper's traces are looked for, in the order ``sprout eval`` uses (the Rust
``sprout_link::data_dirs``; docs/data.md): ``$SPROUT_TRACES``, ``./traces``,
``../shared/traces``, relative to the current folder."""

import os
from pathlib import Path
from typing import List, Optional, Tuple

#: The folders looked in after ``$SPROUT_TRACES``, as ``sprout eval`` does.
DEFAULT_TRACE_DIRS = ("./traces", "../shared/traces")


def trace_dirs(traces_dir: Optional[str] = None) -> List[str]:
    """The folders a trace pair's name is looked up in, in order: ``traces_dir`` if given,
    ``$SPROUT_TRACES`` if set, ``./traces``, ``../shared/traces``."""
    dirs = []
    if traces_dir is not None:
        dirs.append(os.fspath(traces_dir))
    if os.environ.get("SPROUT_TRACES"):
        dirs.append(os.environ["SPROUT_TRACES"])
    dirs.extend(DEFAULT_TRACE_DIRS)
    return dirs


def trace_pair(name: str, traces_dir: Optional[str] = None) -> Tuple[str, str]:
    """The (uplink, downlink) files of the trace pair ``name`` (``NAME.up``, ``NAME.down``),
    from the first folder of ``trace_dirs(traces_dir)`` that has both. ``FileNotFoundError``
    names the folders and how to get the paper's traces when none has them."""
    dirs = trace_dirs(traces_dir)
    for d in dirs:
        up, down = Path(d) / f"{name}.up", Path(d) / f"{name}.down"
        if up.is_file() and down.is_file():
            return str(up), str(down)
    raise FileNotFoundError(
        f"no trace pair {name}.up/{name}.down in {', '.join(dirs)}; "
        "`sprout traces fetch` (or `--from` a mahimahi checkout) puts the paper's traces "
        "in ./traces (docs/data.md)"
    )
