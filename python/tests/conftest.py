"""Shared fixtures of the sprout package's tests: the paper's traces (looked for as `sprout eval`
looks, from the repository root: $SPROUT_TRACES, ./traces, ../shared/traces or
$SPROUT_SHARED_DIR/traces; docs/data.md) and the `sprout` command (target/debug/sprout,
target/release/sprout, or $SPROUT_BIN), which the tests compare the package against."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SPROUT_SHARED_DIR", ROOT.parent / "shared")).resolve()
TRACE_DIRS = [Path(d) for d in [os.environ.get("SPROUT_TRACES")] if d] + [
    ROOT / "traces",
    SHARED / "traces",
]
TRACES = next((d for d in TRACE_DIRS if any(d.glob("*.up"))), SHARED / "traces")


def trace_pair(name):
    """(uplink, downlink) paths of one of the paper's links; skips (visibly, saying where to
    get them) when absent, or fails when SPROUT_REQUIRE_SHARED=1 (CI, where ../shared
    exists)."""
    up, down = TRACES / f"{name}.up", TRACES / f"{name}.down"
    if not (up.is_file() and down.is_file()):
        reason = (
            f"the paper's trace {name} is in none of {', '.join(map(str, TRACE_DIRS))}: "
            "`sprout traces fetch` (or --from a mahimahi checkout) puts them in ./traces; "
            "see docs/data.md"
        )
        if os.environ.get("SPROUT_REQUIRE_SHARED") == "1":
            pytest.fail(reason + ", but SPROUT_REQUIRE_SHARED=1")
        pytest.skip(reason)
    return up, down


@pytest.fixture
def synthetic_pair(tmp_path):
    """(uplink, downlink) paths of a 30 s synthetic link (the paper's model), written to a
    temporary folder: for tests that need trace files but not the paper's."""
    import sprout

    up, down = tmp_path / "Synthetic.up", tmp_path / "Synthetic.down"
    sprout.Trace.synthetic(seed=1, seconds=30).save(up)
    sprout.Trace.synthetic(seed=2, seconds=30).save(down)
    return up, down


@pytest.fixture
def verizon():
    """The Verizon-LTE-short link (140 s each way)."""
    return trace_pair("Verizon-LTE-short")


@pytest.fixture
def tmobile():
    """The TMobile-UMTS-driving link."""
    return trace_pair("TMobile-UMTS-driving")


def _find_cli():
    given = os.environ.get("SPROUT_BIN")
    if given:
        if not (Path(given).is_file() and os.access(given, os.X_OK)):
            raise RuntimeError(f"SPROUT_BIN={given} is not an executable file")
        return given
    for p in (ROOT / "target" / "debug" / "sprout", ROOT / "target" / "release" / "sprout"):
        if p.is_file():
            return str(p)
    return shutil.which("sprout")


class Cli:
    """Runs the `sprout` command."""

    def __init__(self, exe):
        self.exe = exe

    def run(self, *args, check=True):
        """Runs `sprout ARGS`; returns the CompletedProcess (text)."""
        p = subprocess.run([self.exe, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"sprout {' '.join(map(str, args))} failed: {p.stderr}")
        return p

    def sim_json(self, *args):
        """`sprout sim --json ARGS`: (parsed JSON, stdout text)."""
        out = self.run("sim", "--json", *args).stdout
        return json.loads(out), out

    def error(self, *args):
        """The message of a failing `sprout ARGS` (stderr without "error: ")."""
        p = self.run(*args, check=False)
        assert p.returncode != 0, f"sprout {args} succeeded"
        msg = p.stderr.strip()
        return msg[len("error: "):] if msg.startswith("error: ") else msg


@pytest.fixture(scope="session")
def cli():
    """The `sprout` command; skips (visibly) when it is not built and SPROUT_BIN is unset."""
    exe = _find_cli()
    if exe is None:
        pytest.skip("the sprout command is not built (cargo build -p sprout-cli, or set SPROUT_BIN)")
    return Cli(exe)
