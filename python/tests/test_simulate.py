"""sprout.simulate against `sprout sim --json`: the same figures, exactly, for every option."""

import json
import threading
import time

import numpy as np
import pytest

import sprout


def cli_args(uplink, downlink, scheme, **options):
    """`sprout sim` arguments for simulate's keyword options."""
    args = ["--scheme", scheme, "--uplink", uplink, "--downlink", downlink]
    for key, value in options.items():
        if key == "params":
            for k, v in value.items():
                args += ["--param", f"{k}={v if isinstance(v, str) else json.dumps(v)}"]
        else:
            args += ["--" + key.replace("_", "-"), value]
    return args


CASES = {
    "defaults": ("sprout", {}),
    "cubic-loss-seed": ("cubic", {"loss": 0.01, "seed": 3, "duration": 80, "skip": 20}),
    # Sprout-EWMA takes no confidence and only the parameters it uses (not the model's).
    "ewma-params-codel-up": (
        "sprout-ewma",
        {
            "params": {"window_skip_ticks": 0},
            "queue": "codel",
            "load": "up",
            "skip": 30,
        },
    ),
    "per-direction": (
        "sprout",
        {
            "confidence": 0.5,
            "params": {"model.sigma": 250},
            "uplink_queue": "codel",
            "downlink_loss": 0.02,
            "uplink_loss": 0.0,
            "downlink_queue": "infinite",
            "host_jitter_ms": 0,
            "seed": 7,
            "duration": 200,
            "skip": 10,
        },
    ),
    "bbr-down": ("bbr", {"load": "down", "duration": 60, "skip": 5}),
    "codel-scheme": ("cubic-codel", {"duration": 70, "skip": 10}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_figures_equal_sprout_sim_json(case, cli, verizon):
    scheme, options = CASES[case]
    up, down = verizon
    expected, text = cli.sim_json(*cli_args(up, down, scheme, **options))
    result = sprout.simulate(scheme, up, down, **options)
    assert result.to_dict() == expected
    # Not only equal as numbers: the same text, to the last digit.
    assert str(result) == text.rstrip("\n")
    assert result["uplink"] == expected["uplink"]
    assert result.downlink == expected["downlink"]["metrics"]


def test_trace_objects_equal_paths(verizon):
    up, down = verizon
    by_path = sprout.simulate("sprout", up, down, duration=60, skip=10)
    by_object = sprout.simulate(
        "sprout", sprout.Trace.load(up), sprout.Trace.load(down), duration=60, skip=10
    )
    assert by_object.to_dict() == by_path.to_dict()


def test_synthetic_traces_equal_cli_on_their_files(cli, tmp_path):
    up = sprout.Trace.synthetic(seed=11, seconds=40, name="syn.up")
    down = sprout.Trace.constant(6.0, 40, name="syn.down")
    up.save(tmp_path / "syn.up")
    down.save(tmp_path / "syn.down")
    expected, _ = cli.sim_json(*cli_args(tmp_path / "syn.up", tmp_path / "syn.down", "sprout", skip=5))
    assert sprout.simulate("sprout", up, down, skip=5).to_dict() == expected


def test_mm_link_logs_equal_the_cli(cli, verizon, tmp_path):
    up, down = verizon
    cli.run("sim", *cli_args(up, down, "sprout", duration=20, skip=2),
            "--uplink-log", tmp_path / "cli.up.log", "--downlink-log", tmp_path / "cli.down.log")
    sprout.simulate("sprout", up, down, duration=20, skip=2,
                    uplink_log=tmp_path / "py.up.log", downlink_log=str(tmp_path / "py.down.log"))
    for d in ("up", "down"):
        ours = (tmp_path / f"py.{d}.log").read_bytes()
        assert ours == (tmp_path / f"cli.{d}.log").read_bytes()
        assert len(ours) > 10_000


def test_deterministic(verizon):
    up, down = verizon
    a = sprout.simulate("sprout", up, down, seed=5, loss=0.01, duration=50, skip=5)
    b = sprout.simulate("sprout", up, down, seed=5, loss=0.01, duration=50, skip=5)
    c = sprout.simulate("sprout", up, down, seed=6, loss=0.01, duration=50, skip=5)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != c.to_dict()


def test_records_give_the_metrics(verizon):
    up, down = verizon
    r = sprout.simulate("sprout", up, down, records=True)
    rec = r.records
    n = len(rec["sent_us"])
    assert set(rec) == {"sent_us", "arrived_us", "bytes", "app_bytes", "is_data", "direction"}
    assert all(len(v) == n for v in rec.values())
    assert rec["sent_us"].dtype == np.uint64 and rec["bytes"].dtype == np.uint32
    assert rec["is_data"].dtype == np.bool_
    assert np.all(rec["arrived_us"] >= rec["sent_us"])
    d = r.to_dict()
    skip_us, end_us = d["skip_s"] * 1e6, d["duration_s"] * 1e6
    for direction, key in (("up", "uplink"), ("down", "downlink")):
        m = d[key]["metrics"]
        mine = rec["direction"] == direction
        arrived = rec["arrived_us"][mine]
        assert np.all(np.diff(arrived.astype(np.int64)) >= 0), "arrival order"
        inside = (arrived >= skip_us) & (arrived < end_us)
        delivered = int(rec["bytes"][mine][inside].sum())
        assert delivered == m["delivered_bytes"]
        assert int(inside.sum()) == m["packets"]
        window_s = m["window_s"]
        assert delivered * 8 / 1000 / window_s == pytest.approx(m["throughput_kbps"], rel=1e-12)
        goodput = int(rec["app_bytes"][mine][inside].sum()) * 8 / 1000 / window_s
        assert goodput == pytest.approx(m["goodput_kbps"], rel=1e-12)
    frame = r.records_to_pandas()
    assert len(frame) == n and list(frame["direction"].unique()) == ["up", "down"]


def test_no_records_unless_asked(verizon):
    r = sprout.simulate("sprout", *verizon, duration=20, skip=1)
    assert r.records is None
    with pytest.raises(sprout.SproutError, match="records=True"):
        r.records_to_pandas()


def test_to_pandas_has_a_row_per_direction(verizon):
    pd = pytest.importorskip("pandas")
    r = sprout.simulate("cubic", *verizon, duration=60, skip=10)
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df["direction"]) == ["uplink", "downlink"]
    assert list(df["trace"]) == ["Verizon-LTE-short.up", "Verizon-LTE-short.down"]
    for i, key in enumerate(("uplink", "downlink")):
        for metric, value in r[key]["metrics"].items():
            assert df[metric].iloc[i] == value
    assert (df["scheme"] == "cubic").all() and (df["skip_s"] == 10.0).all()


def test_params_as_strings_equal_params_as_dict(verizon):
    up, down = verizon
    a = sprout.simulate("sprout", up, down, duration=40, skip=5, params={"model.sigma": 250})
    b = sprout.simulate("sprout", up, down, duration=40, skip=5, params=["model.sigma=250"])
    assert a.to_dict() == b.to_dict()
    assert a["params"] == ["model.sigma=250"]
    assert a.to_dict() != sprout.simulate("sprout", up, down, duration=40, skip=5).to_dict()


def test_the_gil_is_released_while_simulating(verizon):
    up, down = sprout.Trace.load(verizon[0]), sprout.Trace.load(verizon[1])
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    try:
        time.sleep(0.05)
        start = time.perf_counter()
        for _ in range(3):
            sprout.simulate("sprout", up, down, duration=140, skip=60)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    during = [x for x in ticks if start < x < end]
    # A held GIL would stop the counting thread for the whole call (each call takes
    # hundreds of milliseconds); released, it ticks every millisecond or so.
    assert end - start > 0.1
    assert len(during) >= 20, f"{len(during)} ticks in {end - start:.2f} s"


def test_repr_names_both_directions(verizon):
    r = sprout.simulate("sprout", *verizon, duration=30, skip=5)
    text = repr(r)
    assert text.startswith("<SimResult sprout over 30 s")
    assert "Verizon-LTE-short.up" in text and "Verizon-LTE-short.down" in text
    assert set(r.keys()) == {"scheme", "confidence", "load", "duration_s", "skip_s", "params",
                             "app", "uplink", "downlink"}
    assert "uplink" in r and "nothing" not in r


def test_the_tutorial_runs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "examples" / "tutorial.py"
    p = subprocess.run([sys.executable, script, tmp_path / "no-traces", "--out", tmp_path / "c.png"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Sprout on Synthetic.down" in p.stdout
    assert "Sprout delivered" in p.stdout
