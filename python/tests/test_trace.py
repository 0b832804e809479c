"""sprout.Trace: loading, building, synthesising, capacity per interval."""

import pickle

import numpy as np
import pytest

import sprout


def test_load_reads_every_line(verizon):
    up, _ = verizon
    t = sprout.Trace.load(up)
    times = np.loadtxt(up, dtype=np.uint64)
    assert t.name == "Verizon-LTE-short.up"
    assert len(t) == len(times)
    assert np.array_equal(t.opportunities_ms, times)
    assert t.opportunities_ms.dtype == np.uint64
    assert t.duration_s == int(times[-1]) / 1000
    assert t.mean_mbps == pytest.approx(len(times) * 12_000 / int(times[-1]) / 1000)
    assert sprout.Trace.load(str(up)) == t


def test_capacity_by_hand():
    # 1500 bytes = 12,000 bits per opportunity; 1000 ms intervals over [0, 2500 ms).
    t = sprout.Trace.from_opportunities([1, 1, 2, 999, 1000, 1500, 2400, 2500], name="hand")
    assert t.duration_s == 2.5
    cap = t.capacity(1000)
    # [0,1000): 4 ops; [1000,2000): 2; [2000,2500): 1 over 0.5 s; 2500 is the next pass's.
    assert cap.dtype == np.float64
    assert list(cap) == pytest.approx([4 * 0.012, 2 * 0.012, 1 * 0.012 / 0.5], rel=1e-12)
    assert list(t.capacity(500)) == pytest.approx([3 * 0.024, 0.024, 0.024, 0.024, 0.024],
                                                  rel=1e-12)
    # 700 ms: [0,700) 3 ops, [700,1400) 2, [1400,2100) 1, and [2100,2500) 1 over 0.4 s.
    assert list(t.capacity(700)) == pytest.approx(
        [3 * 12e-3 / 0.7, 2 * 12e-3 / 0.7, 1 * 12e-3 / 0.7, 1 * 12e-3 / 0.4], rel=1e-12)
    with pytest.raises(sprout.SproutError):
        t.capacity(0)


def test_capacity_of_the_paper_traces_adds_up(verizon):
    for path in verizon:
        t = sprout.Trace.load(path)
        cap = t.capacity(100)
        assert len(cap) == int(np.ceil(t.duration_s * 10))
        # Mbit/s x 0.1 s summed = every opportunity but the one at the very end, x 12,000 bits.
        ops = t.opportunities_ms
        inside = int((ops < ops[-1]).sum())
        assert cap.sum() * 0.1 == pytest.approx(inside * 0.012, rel=1e-9)
        assert cap.max() < 100 and cap.min() >= 0


def test_constant():
    t = sprout.Trace.constant(12, 10)
    assert t.name == "constant-12mbit"
    assert len(t) == 10_000 and t.duration_s == 10.0
    assert t.mean_mbps == pytest.approx(12.0)
    cap = t.capacity(1000)
    assert len(cap) == 10
    # Opportunities at 1, 2, ..., 10000 ms: the first second misses the one at 1000 ms.
    assert cap[0] == pytest.approx(11.988) and np.allclose(cap[1:], 12.0)
    with pytest.raises(sprout.SproutError, match="empty trace"):
        sprout.Trace.constant(0, 10, name="zero")


def test_synthetic_is_seeded_and_deterministic():
    a = sprout.Trace.synthetic(seed=4, seconds=30)
    assert a == sprout.Trace.synthetic(seed=4, seconds=30)
    assert a != sprout.Trace.synthetic(seed=5, seconds=30)
    assert a.name == "synthetic-4" and a.duration_s == 30.0
    ops = a.opportunities_ms
    assert np.all(np.diff(ops.astype(np.int64)) >= 0) and ops[-1] == 30_000
    # The paper's model: mean rate at most max_rate (1000 packets/s = 12 Mbit/s).
    assert 0 < a.mean_mbps <= 12.0
    slow = sprout.Trace.synthetic(seed=4, seconds=30, start_rate=100, max_rate=200, name="slow")
    assert slow.name == "slow" and slow.mean_mbps <= 2.4


def test_synthetic_equals_sprout_traces_synth(cli, tmp_path):
    p = cli.run("traces", "synth", "--kind", "brownian", "--seed", "9", "--seconds", "20",
                "--one", "--out", tmp_path / "b", check=False)
    if p.returncode != 0 and "unrecognized subcommand" in p.stderr:
        pytest.skip("this sprout command has no `traces synth`")
    assert p.returncode == 0, p.stderr
    ours = sprout.Trace.synthetic(seed=9, seconds=20)
    theirs = sprout.Trace.load(tmp_path / "b")
    assert np.array_equal(ours.opportunities_ms, theirs.opportunities_ms)


def test_save_parse_pickle_round_trips(tmp_path):
    t = sprout.Trace.synthetic(seed=2, seconds=5, name="x")
    t.save(tmp_path / "x")
    assert sprout.Trace.load(tmp_path / "x") == t
    assert sprout.Trace.parse((tmp_path / "x").read_text(), name="x") == t
    back = pickle.loads(pickle.dumps(t))
    assert back == t and back.name == "x"
    assert sprout.Trace.from_opportunities(t.opportunities_ms, "x") == t


def test_from_opportunities_checks_its_input():
    with pytest.raises(sprout.SproutError, match="goes backwards"):
        sprout.Trace.from_opportunities([5, 3], name="bad")
    with pytest.raises(sprout.SproutError, match="empty trace"):
        sprout.Trace.from_opportunities([], name="none")
    with pytest.raises(sprout.SproutError, match=r"bad:2: not a non-negative integer"):
        sprout.Trace.parse("1\nx\n", name="bad")


def test_repr_and_len():
    t = sprout.Trace.constant(1.2, 2, name="c")
    assert len(t) == 200
    assert repr(t) == "Trace('c', 200 opportunities, 2 s, 1.200 Mbit/s)"
