"""sprout.simulate(..., app=...): application traffic and application-level delay."""

import math

import pytest

import sprout


@pytest.fixture
def link():
    """A constant 5 Mbit/s link, 25 s."""
    return sprout.Trace.constant(5.0, 25.0, name="c5")


def test_direct_constant_stream_arrives_at_the_propagation_delay(link):
    r = sprout.simulate(
        "direct", link, link, app="constant:rate=500k", load="down", skip=5
    )
    assert r.app_spec == "constant:rate=500k,packet=1200"
    assert r["app"] == "constant:rate=500k,packet=1200"
    assert r.app["uplink"] is None
    a = r.app["downlink"]
    assert a == r["downlink"]["app"]
    assert a["delivered_share"] > 0.99
    assert 20.0 <= a["delay_p95_ms"] < 24.0
    assert abs(a["offered_kbps"] - 500.0) < 1.0
    # Datagrams made in the first 15 s of the 20 s window: its last quarter is left for them
    # to arrive.
    assert a["messages"] == 781
    assert a["within_150ms"] > 0.99


def test_sprout_carries_video_and_adaptive_video(link):
    r = sprout.simulate("sprout", link, link, app="video:rate=1M", load="down", skip=5)
    a = r.app["downlink"]
    assert abs(a["offered_kbps"] - 1000.0) < 20.0
    assert a["delivered_share"] > 0.9
    assert a["messages"] == 450  # 30 frames/s over the first 15 s of the 20 s window
    r = sprout.simulate("sprout", link, link, app="adaptive:max=8M", load="both", skip=5)
    for d in ("uplink", "downlink"):
        assert r.app[d]["offered_kbps"] > 1000.0


def test_an_undelivered_message_makes_an_infinite_percentile(link):
    slow = sprout.Trace.constant(1.0, 25.0, name="c1")
    r = sprout.simulate("direct", slow, slow, app="constant:rate=2M", load="down", skip=5)
    a = r.app["downlink"]
    # JSON null for +inf; the run's last messages were never delivered.
    assert a["delay_p99_ms"] is None
    assert a["delivered_share"] < 0.6


def test_bulk_has_no_app_figures_and_is_the_default(link):
    r = sprout.simulate("sprout", link, link, skip=5)
    assert r.app_spec == "bulk"
    assert r.app == {"uplink": None, "downlink": None}
    same = sprout.simulate("sprout", link, link, skip=5, app="bulk")
    assert same.to_json() == r.to_json()


def test_bad_apps_are_bad_parameters(link):
    for app, message in [
        ("constant:rate=0", "app 'constant:rate=0': rate must be between"),
        ("video:rate=1M,fps=0", "fps must be between 1 and 240"),
        ("stream", "unknown kind 'stream'"),
    ]:
        with pytest.raises(sprout.BadParameterError, match=message.replace("(", r"\(")):
            sprout.simulate("sprout", link, link, app=app, skip=5)
    with pytest.raises(sprout.BadParameterError, match="would flood the link"):
        sprout.simulate("direct", link, link, skip=5)


def test_to_pandas_has_the_app_columns(link):
    pd = pytest.importorskip("pandas")
    r = sprout.simulate("direct", link, link, app="constant:rate=500k", load="down", skip=5)
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    down = df[df.direction == "downlink"].iloc[0]
    assert down["app"] == "constant:rate=500k,packet=1200"
    assert down["app_delivered_share"] > 0.99
    up = df[df.direction == "uplink"].iloc[0]
    assert up["app_delivered_share"] is None or math.isnan(up["app_delivered_share"])


def test_fq_codel_keeps_a_stream_beside_a_cubic_download_fast(link):
    """The paced stream shares the downlink with a Cubic download (``cross``): behind the
    download's standing queue in an unlimited FIFO, in a flow queue of its own in FQ-CoDel."""
    runs = {
        q: sprout.simulate(
            "direct", link, link, app="constant:rate=500k", load="down", skip=5,
            cross="cubic", queue=q,
        )
        for q in ("infinite", "fq-codel")
    }
    fifo, fq = (runs[q].app["downlink"] for q in ("infinite", "fq-codel"))
    assert fq["delay_p95_ms"] < 40.0 and fq["delivered_share"] > 0.99
    # Behind the FIFO's standing queue even the median waits seconds; more than 5% of the
    # messages never arrive in the run, so its p95 is not a number (None).
    assert fifo["delay_p50_ms"] > 5 * fq["delay_p95_ms"]
    assert fifo["delay_p95_ms"] is None or fifo["delay_p95_ms"] > 5 * fq["delay_p95_ms"]
    assert runs["fq-codel"]["downlink"]["cross_bytes"] > 0
    with pytest.raises(sprout.BadParameterError, match="congestion controller"):
        sprout.simulate("direct", link, link, app="constant:rate=500k", cross="nope")
