"""A sweep on a Ray cluster of two nodes on this machine (`ray start --head`, `ray start
--address`), the second killed mid-sweep, then the sweep itself, and run again: python/examples/ray_cluster.py
checks that every run is in the output once, with the rows of a local run (about a minute)."""

import subprocess
import sys
from pathlib import Path

import pytest

from test_sweep import sprout_binary

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "ray_cluster.py"


def test_sweep_survives_losing_a_node(tmp_path):
    pytest.importorskip("ray", reason="SKIPPED: Ray is not installed (pip install './python[ray]')")
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("SKIPPED: the example finds the node's processes in /proc (Linux)")
    cmd = [sys.executable, str(SCRIPT), "--seeds", "30", "--kill-sweep"]
    exe = sprout_binary()
    if exe:  # through `sprout sweep --ray ADDRESS`, which runs python -m sprout.sweep
        cmd += ["--sprout", exe]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "killed the second node after" in p.stdout
    assert "killed the sweep itself" in p.stdout and "running it again" in p.stdout
    assert "output: 360 rows, 360 distinct run ids; plan: 360 runs; missing 0, duplicated 0" \
        in p.stdout
    assert "byte for byte: True" in p.stdout
