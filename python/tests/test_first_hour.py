"""What a new user meets first, from Python: no silent all-zero result, no figure that means
nothing, no duplicate run under another name."""

import csv

import pytest

import sprout


def test_a_window_that_measures_nothing_is_an_error(verizon):
    # Verizon-LTE-short lasts 140 s: measuring from 200 s measures nothing.
    with pytest.raises(sprout.BadParameterError, match=r"give a --skip at most 135\.0 s"):
        sprout.simulate("sprout", *verizon, skip=200)
    with pytest.raises(sprout.BadParameterError, match="an empty window"):
        sprout.simulate("sprout", *verizon, duration=20, skip=30)


def test_a_run_too_large_to_hold_is_refused(verizon):
    with pytest.raises(sprout.BadParameterError, match="give a --duration of at most"):
        sprout.simulate("sprout", *verizon, duration=1e12, skip=0)


def test_an_unloaded_direction_has_no_data_only_delay(verizon):
    r = sprout.simulate("cubic", *verizon, load="up", duration=60, skip=10)
    assert r.downlink["self_inflicted_data_ms"] is None
    assert r.uplink["self_inflicted_data_ms"] > 0


def test_a_parameter_sprout_ewma_ignores_is_refused(verizon):
    with pytest.raises(sprout.BadParameterError, match="sprout-ewma does not use it"):
        sprout.simulate("sprout-ewma", *verizon, params={"model.sigma": 250})


def test_a_sweep_runs_sprout_ewma_once_per_parameter_it_uses(tmp_path):
    spec = """
traces = [{ name = "c", constant = { mbps = 4, seconds = 20 } }]
schemes = ["sprout", "sprout-ewma"]
[params]
"model.sigma" = [100, 200, 400]
[sim]
duration = 12
skip = 2
"""
    out = tmp_path / "s.csv"
    sprout.sweep(spec, out=out, executor="local", workers=1, progress=False)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    schemes = [r["scheme"] for r in rows]
    assert schemes.count("sprout") == 3
    assert schemes.count("sprout-ewma") == 1, rows
    ewma = next(r for r in rows if r["scheme"] == "sprout-ewma")
    assert ewma["param.model.sigma"] == ""


def test_trace_pair_looks_where_sprout_eval_looks(tmp_path, monkeypatch):
    # $SPROUT_TRACES first, then ./traces, then ../shared/traces (docs/data.md).
    mine = tmp_path / "mine"
    mine.mkdir()
    for d in ("up", "down"):
        (mine / f"Home.{d}").write_text("1\n2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPROUT_TRACES", str(mine))
    assert sprout.trace_dirs()[:2] == [str(mine), "./traces"]
    assert sprout.trace_pair("Home") == (str(mine / "Home.up"), str(mine / "Home.down"))
    monkeypatch.delenv("SPROUT_TRACES")
    (tmp_path / "traces").mkdir()
    for d in ("up", "down"):
        (tmp_path / "traces" / f"Home.{d}").write_text("1\n2\n")
    assert sprout.trace_pair("Home") == ("traces/Home.up", "traces/Home.down")
    with pytest.raises(FileNotFoundError, match="sprout traces fetch"):
        sprout.trace_pair("Elsewhere")
