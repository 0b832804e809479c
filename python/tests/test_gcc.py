"""GCC (Google Congestion Control, the simulator's model) runs from Python with an application
of its own rate, as `sprout sim --scheme gcc --app adaptive` does: a video call both ways."""

import pytest

import sprout


def _call(mbps, seconds=60.0):
    link = sprout.Trace.constant(mbps, seconds)
    return sprout.simulate("gcc", link, link, app="adaptive", skip=20)


def test_gcc_sends_below_a_slow_link():
    r = _call(0.3)
    assert r.scheme == "gcc"
    for direction in ("uplink", "downlink"):
        app = r.app[direction]
        # The adaptive source sends at GCC's target rate: held below 400 kbit/s by a
        # 300 kbit/s link (its start, 300 kbit/s and up, is skipped), and still sending.
        assert 50 < app["offered_kbps"] < 400, (direction, app)
        assert app["messages"] > 100, (direction, app)


def test_gcc_keeps_frames_fast_on_a_2_mbit_link():
    r = _call(2.0)
    for direction in ("uplink", "downlink"):
        app = r.app[direction]
        p95 = app["delay_p95_ms"]
        # None is a frame never delivered (infinitely late).
        assert p95 is not None and p95 < 300, (direction, app)
        # Not by sending nothing: most of the link carries video.
        assert app["delivered_kbps"] > 500, (direction, app)


def test_gcc_without_an_application_is_refused():
    link = sprout.Trace.constant(2.0, 30.0)
    with pytest.raises(Exception, match="gcc with app bulk"):
        sprout.simulate("gcc", link, link, skip=5)


def test_gcc_runs_in_the_evaluation_as_a_video_call(synthetic_pair, tmp_path):
    pytest.importorskip("pandas")
    df = sprout.evaluate(
        traces=synthetic_pair[0].parent, schemes="sprout,gcc", out=tmp_path / "out", skip=5
    )
    gcc = df[df["scheme"] == "gcc"]
    assert len(gcc) == 2 == len(df[df["scheme"] == "sprout"])
    # A video call sends less than Sprout's bulk transfer, and the summary says what it ran.
    assert gcc["throughput_kbps"].mean() < df[df["scheme"] == "sprout"]["throughput_kbps"].mean()
    note = "gcc runs the adaptive video source (a video call), not a bulk transfer"
    assert df.attrs["summary"].count(note) == 1
