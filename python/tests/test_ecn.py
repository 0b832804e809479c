"""sprout.simulate(..., ecn=True): ECN marking in the link and ECN in the TCP peers."""

import sprout


def test_cubic_with_ecn_through_codel_is_marked_not_dropped():
    link = sprout.Trace.constant(12.0, 30.0, name="c12")
    runs = {
        ecn: sprout.simulate(
            "cubic", link, link, queue="codel", load="down", skip=5, ecn=ecn
        )
        for ecn in (False, True)
    }
    off, on = runs[False]["downlink"], runs[True]["downlink"]
    assert off["drops"]["aqm"] > 10 and off["marks"] == {"aqm": 0, "step": 0}
    assert on["marks"]["aqm"] > 10 and on["drops"]["aqm"] == 0
    assert on["metrics"]["throughput_kbps"] > 0.95 * off["metrics"]["throughput_kbps"]


def test_sprout_datagrams_are_not_marked():
    link = sprout.Trace.constant(12.0, 30.0, name="c12")
    r = sprout.simulate("sprout", link, link, queue="codel", skip=5, ecn=True)
    assert r["downlink"]["marks"] == {"aqm": 0, "step": 0}
