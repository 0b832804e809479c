"""sprout.evaluate against `sprout eval`: the same results.csv, returned as a DataFrame."""

import os

import pytest

import sprout

pd = pytest.importorskip("pandas")


def one_link_folder(tmp_path, verizon):
    """A folder holding only Verizon-LTE-short (links to the shared traces, not copies)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for path in verizon:
        os.symlink(path, folder / path.name)
    return folder


def test_evaluate_equals_sprout_eval(cli, verizon, tmp_path):
    traces = one_link_folder(tmp_path, verizon)
    df = sprout.evaluate(traces=traces, schemes=["sprout", "cubic", "omniscient"],
                         out=tmp_path / "py", skip=30, jobs=2)
    cli.run("eval", "--traces", traces, "--schemes", "sprout,cubic,omniscient",
            "--out", tmp_path / "cli", "--skip", "30", "--jobs", "2", "--quiet")
    expected = pd.read_csv(tmp_path / "cli" / "results.csv")
    pd.testing.assert_frame_equal(df, expected)
    assert (tmp_path / "py" / "results.csv").read_text() == (
        tmp_path / "cli" / "results.csv").read_text()
    # fig7: 3 schemes x 2 directions of the one link.
    assert len(df) == 6
    assert set(df["scheme"]) == {"sprout", "cubic", "omniscient"}
    assert set(df["direction"]) == {"up", "down"}
    assert (df["experiment"] == "fig7").all()
    assert "from " in df.attrs["summary"]


def test_evaluate_rows_equal_simulate(verizon, tmp_path):
    traces = one_link_folder(tmp_path, verizon)
    df = sprout.evaluate(traces=str(traces), schemes="sprout", out=tmp_path / "out", skip=60)
    r = sprout.simulate("sprout", *verizon)
    for direction, key in (("up", "uplink"), ("down", "downlink")):
        row = df[df["direction"] == direction].iloc[0]
        m = r[key]["metrics"]
        for metric in ("throughput_kbps", "p95_delay_ms", "self_inflicted_ms", "utilization"):
            assert row[metric] == pytest.approx(m[metric], rel=1e-9), metric


def test_evaluate_folder_without_traces(cli, tmp_path):
    empty = tmp_path / "none"
    empty.mkdir()
    with pytest.raises(sprout.SproutError) as e:
        sprout.evaluate(traces=empty, schemes=["sprout"], out=tmp_path / "out")
    assert str(e.value) == cli.error("eval", "--traces", empty, "--out", tmp_path / "o")
    assert str(e.value) == f"no trace pairs (NAME.up and NAME.down) in {empty}; it is empty"


def test_evaluate_errors(cli, tmp_path):
    with pytest.raises(sprout.SproutError) as e:
        sprout.evaluate(experiments=["fig99"], out=tmp_path / "out")
    assert str(e.value) == cli.error("eval", "--experiments", "fig99", "--out", tmp_path / "o")
    with pytest.raises(sprout.SproutError, match="unknown scheme 'tahoe'"):
        sprout.evaluate(schemes=["tahoe"], out=tmp_path / "out")
    missing = tmp_path / "no-such-folder"
    with pytest.raises(FileNotFoundError) as e:
        sprout.evaluate(traces=missing, out=tmp_path / "out")
    assert str(e.value) == cli.error("eval", "--traces", missing, "--out", tmp_path / "o")
