"""Copa (delta 0.5 and 0.1) runs from Python as any scheme, and is no default scheme."""

import sprout


def test_copa_is_a_modern_scheme_not_a_default_one():
    assert sprout.MODERN_SCHEMES == ["copa", "copa-0.1"]
    assert not set(sprout.MODERN_SCHEMES) & set(sprout.SCHEMES)


def test_copa_fills_a_constant_link_with_a_small_queue_and_delta_sets_its_size():
    link = sprout.Trace.constant(12.0, 30.0)
    r05 = sprout.simulate("copa", link, link, load="down", skip=5)
    r01 = sprout.simulate("copa-0.1", link, link, load="down", skip=5)
    assert r05.scheme == "copa" and r01.scheme == "copa-0.1"
    assert r05.downlink["utilization"] > 0.8
    assert r01.downlink["utilization"] > 0.8
    d05 = r05.downlink["self_inflicted_data_ms"]
    d01 = r01.downlink["self_inflicted_data_ms"]
    assert d05 < d01 < 40, (d05, d01)
