"""A sweep on a real Ray cluster of two nodes (both on this machine), one of them killed
mid-sweep: every run ends up in the output exactly once, with the rows of a local run.

    pip install './python[ray]'
    python python/examples/ray_cluster.py [--seeds N] [--sprout target/release/sprout]

It starts a head node (`ray start --head`) and a second node (`ray start --address`), one CPU
each, with their own ports, temporary folder and authentication token (RAY_AUTH_TOKEN); runs
the sweep on the cluster (`python -m sprout.sweep SPEC --ray ADDRESS`, which `sprout sweep
--ray ADDRESS` runs; with --sprout, that command); kills the second node (SIGKILL to its raylet
and the workers under it) while it runs sweep tasks and a third of the rows are in; waits for
the sweep (and runs it again if it stopped: it resumes; --kill-sweep also kills the sweep
itself when two thirds of the rows are in); then checks the output against the
plan (every run id once) and against the same sweep run locally (byte for byte). It prints the
evidence and exits 1 if a run is lost, duplicated or different. The cluster's processes (and
only they) are stopped at the end.
"""

import argparse
import csv
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sprout.sweep as sw

SPEC = """
traces = [{{ name = "c6", constant = {{ mbps = 6, seconds = 40 }} }},
          {{ name = "syn", synthetic = {{ seed = 3, duration_s = 40 }} }}]
schemes = ["sprout", "cubic"]
seeds = {seeds}
[params]
"model.sigma" = [100, 150, 200, 250, 300]
[sim]
duration = 30.0
skip = 2.0
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def say(msg: str):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def processes_with(text: str):
    """Pids of this machine's processes whose command line contains ``text``."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def descendants(pid: int):
    """``pid`` and the processes under it."""
    children = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def kill_all(pids, sig=signal.SIGKILL):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def rows_in(path: Path) -> int:
    try:
        return max(0, path.read_bytes().count(b"\n") - 1)
    except OSError:
        return 0


class Cluster:
    """Two Ray nodes on this machine, started with `ray start`, in a folder of their own."""

    def __init__(self, tmp: Path, env: dict):
        self.tmp, self.env = tmp, env
        self.ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
        if self.ray is None:
            sys.exit("no `ray` command: pip install './python[ray]'")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.worker_nm_port = free_port()

    def start(self):
        common = ["--num-cpus=1", "--disable-usage-stats", f"--temp-dir={self.tmp / 'ray'}"]
        head = [self.ray, "start", "--head", f"--port={self.port}", "--include-dashboard=false",
                f"--node-manager-port={free_port()}", *common]
        # The second node on another loopback address, so that the driver (which joins the
        # node of its own address) stays on the head.
        worker = [self.ray, "start", f"--address={self.address}", "--node-ip-address=127.0.0.2",
                  f"--node-manager-port={self.worker_nm_port}", *common]
        for name, cmd in (("head", head), ("second node", worker)):
            p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                raise RuntimeError(f"ray start ({name}) failed:\n{p.stdout}\n{p.stderr}")
            say(f"started the {name}: {' '.join(cmd[1:4])} ...")

    def worker_raylet(self):
        pids = [p for p in processes_with(f"--node_manager_port={self.worker_nm_port}")
                if "raylet" in cmdline(p).split()[0]]
        return pids[0] if pids else None

    def stop(self):
        """Stops this cluster's processes (those naming its folder, and those under them)."""
        pids = set()
        for p in processes_with(str(self.tmp / "ray")):
            pids.update(descendants(p))
        pids.discard(os.getpid())
        kill_all(pids, signal.SIGTERM)
        time.sleep(2)
        kill_all([p for p in pids if Path(f"/proc/{p}").exists()])


def nodes(env, address):
    """(alive, dead) node counts of the cluster, asked through a short-lived driver."""
    code = ("import ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
            "n = ray.nodes(); print('NODES', sum(x['Alive'] for x in n), "
            "sum(not x['Alive'] for x in n))" % address)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    for line in p.stdout.splitlines():
        if line.startswith("NODES "):
            alive, dead = line.split()[1:3]
            return int(alive), int(dead)
    return None


def sweep_cmd(args, spec: Path, out: Path, address: str):
    if args.sprout:
        return [args.sprout, "sweep", str(spec), "--out", str(out), "--ray", address, "--quiet"]
    return [sys.executable, "-m", "sprout.sweep", str(spec), "--out", str(out), "--ray", address,
            "--quiet"]


def run_and_kill(args, cluster: Cluster, spec: Path, out: Path, total: int):
    """Runs the sweep on the cluster, kills the second node mid-sweep; returns (exit status,
    rows at the kill)."""
    env = dict(cluster.env, SPROUT_PYTHON=sys.executable)
    start = time.monotonic()
    sweep = subprocess.Popen(sweep_cmd(args, spec, out, cluster.address), env=env)
    killed_at = None
    while sweep.poll() is None:
        time.sleep(0.2)
        if killed_at is not None:
            rows = rows_in(out)
            if args.kill_sweep and rows >= 2 * total // 3:
                kill_all(descendants(sweep.pid))
                sweep.wait()
                say(f"killed the sweep itself (SIGKILL), {rows} of {total} rows in")
            continue
        raylet = cluster.worker_raylet()
        busy = [p for p in descendants(raylet)[1:] if cmdline(p).startswith("ray::_ray_chunk")] \
            if raylet else []
        rows = rows_in(out)
        if busy and rows >= total // 3:
            victims = descendants(raylet)
            kill_all(victims)
            killed_at = rows
            say(f"killed the second node after {time.monotonic() - start:.1f} s, {rows} of "
                f"{total} rows in: SIGKILL to its raylet (pid {raylet}) and the {len(victims) - 1} "
                f"processes under it, {len(busy)} of them running sweep tasks")
    say(f"the sweep exited with status {sweep.returncode} after {time.monotonic() - start:.1f} s")
    if killed_at is None:
        say("error: the sweep ended before the second node could be killed mid-sweep")
    return sweep.returncode, killed_at


def check(out: Path, plan_ids, local: Path) -> bool:
    with open(out, newline="") as f:
        ids = [row[0] for row in list(csv.reader(f))[1:]]
    dupes = len(ids) - len(set(ids))
    missing = set(plan_ids) - set(ids)
    extra = set(ids) - set(plan_ids)
    same = out.read_bytes() == local.read_bytes()
    say(f"output: {len(ids)} rows, {len(set(ids))} distinct run ids; plan: {len(plan_ids)} runs; "
        f"missing {len(missing)}, duplicated {dupes}, unknown {len(extra)}")
    say(f"identical to the local run ({local.name}), byte for byte: {same}")
    return not missing and not dupes and not extra and len(ids) == len(plan_ids) and same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100,
                    help="seeds per configuration (12 runs of 30 s each) [default: 100]")
    ap.add_argument("--sprout", help="run `SPROUT sweep --ray ADDRESS` (the CLI) instead of "
                    "python -m sprout.sweep")
    ap.add_argument("--kill-sweep", action="store_true",
                    help="also kill the sweep (its driver) when two thirds of the rows are in; "
                    "running it again resumes")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sprout-ray-"))
    spec = tmp / "spec.toml"
    spec.write_text(SPEC.format(seeds=a.seeds))
    plan_ids = sw.plan(spec).ids()
    out, local = tmp / "cluster.csv", tmp / "local.csv"
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32),
               RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    cluster = Cluster(tmp, env)
    say(f"{len(plan_ids)} runs of 30 simulated seconds; cluster at {cluster.address}, files in {tmp}")
    ok = False
    try:
        cluster.start()
        say(f"nodes alive, dead: {nodes(env, cluster.address)}")
        status, killed_at = run_and_kill(a, cluster, spec, out, len(plan_ids))
        counts, waited = nodes(env, cluster.address), time.monotonic()
        while counts and counts[1] == 0 and time.monotonic() - waited < 60:
            time.sleep(2)  # Ray marks a node dead after missed health checks
            counts = nodes(env, cluster.address)
        say(f"nodes alive, dead: {counts}")
        if status != 0:
            before = rows_in(out)
            say(f"the sweep stopped with {before} rows; running it again on the head (resume)")
            t = time.monotonic()
            status = subprocess.run(sweep_cmd(a, spec, out, cluster.address),
                                    env=dict(env, SPROUT_PYTHON=sys.executable)).returncode
            say(f"the second run exited with status {status} after {time.monotonic() - t:.1f} s, "
                f"{rows_in(out) - before} rows added")
        t = time.monotonic()
        sw.sweep(spec, local, workers=2, progress=False)
        say(f"the same sweep locally (2 threads): {time.monotonic() - t:.1f} s")
        ok = status == 0 and killed_at is not None and check(out, plan_ids, local)
    finally:
        cluster.stop()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    say("OK: nothing lost, nothing duplicated" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
