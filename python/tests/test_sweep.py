"""sprout.sweep: the same rows from the local executor, from Ray tasks (a local Ray instance
with 2 workers) and from `sprout sweep`; resuming skips finished runs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sprout
import sprout.sweep as sw
from sprout import _sprout

REPO = Path(__file__).resolve().parents[2]

# 2 traces x 5 sigmas x 20 seeds = 200 runs of 10 simulated seconds.
SPEC_200 = """
traces = [{ name = "c6", constant = { mbps = 6, seconds = 30 } },
          { name = "syn", synthetic = { seed = 3, duration_s = 30 } }]
schemes = ["sprout"]
seeds = 20
[params]
"model.sigma" = [100, 150, 200, 250, 300]
[sim]
duration = 10.0
skip = 2.0
"""

# 2 traces x (sprout x 2 losses + cubic x 2 losses) x 3 seeds = 24 runs.
SPEC_SMALL = """
traces = [{ name = "c6", constant = { mbps = 6, seconds = 30 } },
          { name = "syn", synthetic = { seed = 3, duration_s = 30 } }]
schemes = ["sprout", "cubic"]
seeds = [1, 2, 3]
[sim]
duration = 8.0
skip = 2.0
loss = [0.0, 0.02]
"""


def write_spec(tmp_path, text, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def local_200(tmp_path_factory):
    d = tmp_path_factory.mktemp("local")
    spec = write_spec(d, SPEC_200)
    out = d / "local.csv"
    df = sw.sweep(spec, out, workers=2, progress=False)
    return spec, out, df


def test_local_sweep_rows(local_200):
    spec, out, df = local_200
    assert len(df) == 200
    assert list(df["run_id"]) == sorted(df["run_id"])
    assert df["run_id"].is_unique
    assert set(df["param.model.sigma"]) == {100, 150, 200, 250, 300}
    assert (df["duration_s"] == 10).all()
    # A row is sprout.simulate's figures for its run.
    row = df[(df.trace == "c6") & (df.scheme == "sprout") & (df.seed == 4)
             & (df["param.model.sigma"] == 150)].iloc[0]
    link = _sprout.Trace.constant(6, 30, name="c6.up")
    sim = _sprout.simulate("sprout", link, link, duration=10.0, skip=2.0, seed=4,
                           params={"model.sigma": 150})
    assert row["down_throughput_kbps"] == sim.downlink["throughput_kbps"]
    assert row["up_self_inflicted_ms"] == sim.uplink["self_inflicted_ms"]


def test_ray_rows_identical_to_local(local_200, tmp_path):
    ray = pytest.importorskip("ray")
    spec, local_out, _ = local_200
    out = tmp_path / "ray.csv"
    df = sw.sweep(spec, out, executor="ray", workers=2, progress=False)
    assert not ray.is_initialized()  # the local instance it started is shut down
    assert len(df) == 200
    assert out.read_bytes() == local_out.read_bytes()


def test_resume_skips_finished_runs(tmp_path, monkeypatch):
    spec = write_spec(tmp_path, SPEC_SMALL)
    full = tmp_path / "full.csv"
    sw.sweep(spec, full, workers=2, progress=False)
    lines = full.read_text().splitlines(keepends=True)
    assert len(lines) == 25
    # Keep 10 finished rows and a half-written one (a crash mid-row).
    part = tmp_path / "part.csv"
    part.write_text("".join(lines[:11]) + lines[11][:30])
    calls = []
    real = _sprout.sweep_run
    monkeypatch.setattr(sw._sprout, "sweep_run", lambda r: calls.append(r) or real(r))
    df = sw.sweep(spec, part, workers=2, progress=False)
    assert len(calls) == 14
    assert len(df) == 24
    assert part.read_bytes() == full.read_bytes()
    # Everything done: nothing runs.
    calls.clear()
    sw.sweep(spec, part, workers=2, progress=False)
    assert calls == []


def test_dict_spec_callable_module_and_parquet(tmp_path):
    spec = {
        "traces": [{"name": "c6", "constant": {"mbps": 6, "seconds": 30}}],
        "schemes": ["sprout"],
        "seeds": [1, 2],
        "params": {"confidence": [0.5, 0.95]},
        "sim": {"duration": 7.0, "skip": 1.0},  # a window of at least 5 s
    }
    out = tmp_path / "d.csv"
    df = sprout.sweep(spec, out, progress=False)  # the module is callable
    assert len(df) == 4
    p = sw.plan(spec)
    assert sorted(p.ids()) == list(df["run_id"])
    pytest.importorskip("pyarrow")
    pq = sw.sweep(spec, tmp_path / "d.parquet", progress=False)
    assert list(pq["run_id"]) == list(df["run_id"])
    assert (tmp_path / "d.parquet").is_file()


def test_spec_errors():
    with pytest.raises(sprout.SproutError, match="unknown scheme 'warp'"):
        sw.plan({"traces": [{"name": "c", "constant": {"mbps": 1, "seconds": 5}}],
                 "schemes": ["warp"]})
    with pytest.raises(sprout.SproutError, match="unknown key 'nope'"):
        sw.plan({"traces": [{"name": "c", "constant": {"mbps": 1, "seconds": 5}}],
                 "params": {"nope": 1}})


def sprout_binary():
    for p in (os.environ.get("SPROUT_BIN"), REPO / "target/release/sprout",
              REPO / "target/debug/sprout", shutil.which("sprout")):
        if p and Path(p).is_file():
            return str(p)
    return None


def test_command_line_rows_identical(tmp_path):
    exe = sprout_binary()
    if exe is None:
        pytest.skip("SKIPPED: no sprout binary (cargo build -p sprout-cli, or set SPROUT_BIN)")
    spec = write_spec(tmp_path, SPEC_SMALL)
    py_out, cli_out = tmp_path / "py.csv", tmp_path / "cli.csv"
    sw.sweep(spec, py_out, workers=2, progress=False)
    r = subprocess.run([exe, "sweep", str(spec), "--out", str(cli_out), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "24 runs: 24 run" in r.stdout
    assert cli_out.read_bytes() == py_out.read_bytes()


# --- Without the package or without Ray: one line saying what to install, nothing written. ---

INSTALL_RAY = "pip install './python[ray]'"


def no_ray_dir(tmp_path):
    """A folder that, first on PYTHONPATH, makes `import ray` fail as if Ray were absent."""
    d = tmp_path / "no-ray"
    (d / "ray").mkdir(parents=True)
    (d / "ray" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n")
    return d


def wrapper(tmp_path, name, body):
    """An executable shell script standing in for a Python interpreter."""
    p = tmp_path / name
    p.write_text(f"#!/bin/sh\n{body}\n")
    p.chmod(0o755)
    return str(p)


def earlier_output(tmp_path):
    """(spec, out): a CSV holding part of an earlier run's rows, and its bytes."""
    spec = write_spec(tmp_path, SPEC_SMALL)
    out = tmp_path / "earlier.csv"
    sw.sweep(spec, out, workers=2, progress=False)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:6]))
    return spec, out, out.read_bytes()


def assert_one_line_error(p, *needles):
    err = p.stderr.strip()
    assert p.returncode != 0, p.stdout
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_python_sweep_without_ray_is_one_line_and_writes_nothing(tmp_path):
    spec, earlier, before = earlier_output(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(no_ray_dir(tmp_path)))
    for out in (tmp_path / "new.csv", earlier):
        p = subprocess.run([sys.executable, "-m", "sprout.sweep", str(spec), "--out", str(out),
                            "--ray", "local", "--quiet"], capture_output=True, text=True, env=env)
        assert_one_line_error(p, "error: executor='ray'", "No module named 'ray'", INSTALL_RAY)
    assert not (tmp_path / "new.csv").exists()
    assert earlier.read_bytes() == before


def test_sweep_function_without_ray_or_pyarrow_raises_before_writing(tmp_path, monkeypatch):
    spec = write_spec(tmp_path, SPEC_SMALL)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r"pip install '\./python\[ray\]'"):
        sw.sweep(spec, tmp_path / "r.csv", executor="ray", progress=False)
    assert not (tmp_path / "r.csv").exists()
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install '\./python\[parquet\]'"):
        sw.sweep(spec, tmp_path / "r.parquet", progress=False)
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("missing", ["package", "ray"])
def test_cli_sweep_ray_without_package_or_ray(missing, tmp_path):
    exe = sprout_binary()
    if exe is None:
        pytest.skip("SKIPPED: no sprout binary (cargo build -p sprout-cli, or set SPROUT_BIN)")
    spec, earlier, before = earlier_output(tmp_path)
    if missing == "package":  # this interpreter without its site-packages: no sprout, no ray
        python = wrapper(tmp_path, "python-bare", f'exec "{sys.executable}" -S "$@"')
        needle = "sprout.sweep: No module named 'sprout'"
    else:
        python = wrapper(tmp_path, "python-no-ray",
                         f'PYTHONPATH="{no_ray_dir(tmp_path)}" exec "{sys.executable}" "$@"')
        needle = "ray: No module named 'ray'"
    env = dict(os.environ, SPROUT_PYTHON=python)
    for out in (tmp_path / "new.csv", earlier):
        p = subprocess.run([exe, "sweep", str(spec), "--out", str(out), "--ray", "local",
                            "--quiet"], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert_one_line_error(p, needle, INSTALL_RAY, "SPROUT_PYTHON")
    assert not (tmp_path / "new.csv").exists()  # no header-only CSV
    assert earlier.read_bytes() == before


def test_local_ray_instance_even_when_the_environment_names_a_cluster(tmp_path, monkeypatch):
    # "local" (and the default) start a Ray instance of their own: a RAY_ADDRESS left in the
    # environment (or a cluster started earlier on this machine) is not joined.
    ray = pytest.importorskip("ray")
    spec = write_spec(tmp_path, SPEC_SMALL)
    local, out = tmp_path / "local.csv", tmp_path / "ray.csv"
    sw.sweep(spec, local, workers=2, progress=False)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")  # nothing listens there
    df = sw.sweep(spec, out, executor="ray", ray_address="local", workers=2, progress=False)
    assert not ray.is_initialized()
    assert len(df) == 24
    assert out.read_bytes() == local.read_bytes()


def test_unreachable_cluster_is_a_quick_connection_error(tmp_path):
    pytest.importorskip("ray")
    import socket
    import time

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = write_spec(tmp_path, SPEC_SMALL)
    t = time.monotonic()
    with pytest.raises(ConnectionError, match=f"no Ray cluster answers at 127.0.0.1:{port}"):
        sw.sweep(spec, tmp_path / "r.csv", executor="ray", ray_address=f"127.0.0.1:{port}",
                 progress=False)
    assert time.monotonic() - t < 15
    assert not (tmp_path / "r.csv").exists()
