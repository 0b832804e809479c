"""The link's shaping options from Python (issue 38): `sprout.simulate`, the Gymnasium
environment and the sweeps take every shaping flag of `sprout sim` (buffers, Gilbert-Elliott
loss, jitter, delay traces, ECN, the L4S step, CoDel's and FQ-CoDel's parameters) by the same
names and spellings; each changes the run the way it should, the figures equal the command
line's, and bad values are refused naming the option. One short constant-rate link, so that
the whole file runs in a few seconds."""

import statistics

import numpy as np
import pytest

import sprout
from sprout import _sprout

RATE_MBPS = 12
#: A short run: seconds simulated and skipped before measuring.
SHORT = dict(duration=6.0, skip=1.0)
#: A flow that never fills the queue: no congestion control, 1 Mbit/s into 12 Mbit/s.
LIGHT = dict(scheme="direct", app="constant:rate=1M", load="down")


@pytest.fixture(scope="module")
def link(tmp_path_factory):
    """(uplink, downlink) files of a 12 Mbit/s constant link, 8 s long."""
    d = tmp_path_factory.mktemp("link")
    up, down = d / "c12.up", d / "c12.down"
    trace = sprout.Trace.constant(RATE_MBPS, 8)
    trace.save(up)
    trace.save(down)
    return up, down


@pytest.fixture(scope="module")
def delays(tmp_path_factory):
    """A delay trace: 80 ms throughout."""
    p = tmp_path_factory.mktemp("delay") / "d80.txt"
    p.write_text("# a constant 80 ms\ninterval 100ms\n80\n")
    return p


def run(link, **kw):
    opts = {**SHORT, **kw}
    scheme = opts.pop("scheme", "cubic")
    return sprout.simulate(scheme, *link, **opts)


def data_delays_ms(result):
    """One-way delays (ms) of the downlink's data packets."""
    r = result.records
    keep = (r["direction"] == "down") & r["is_data"]
    return (r["arrived_us"][keep] - r["sent_us"][keep]) / 1e3


def test_a_finite_buffer_drops_packets_and_bounds_the_delay(link):
    free = run(link, load="down")
    small = run(link, load="down", buffer="20pkt")
    assert free["downlink"]["drops"]["buffer"] == 0
    assert small["downlink"]["drops"]["buffer"] > 0
    # 20 packets of 1500 bytes drain in 20 ms at 12 Mbit/s: with the 20 ms propagation
    # delay, no packet waits much over 40 ms; without a limit Cubic's queue grows far deeper.
    assert small.downlink["p95_delay_ms"] < 60, small.downlink
    assert free.downlink["p95_delay_ms"] > 2 * small.downlink["p95_delay_ms"], free.downlink


def lost_bursts(log_path):
    """Per packet reaching the downlink's queue, whether it was lost at random (from the
    mm-link log: a `+` line, then `d 1 BYTES loss` for a loss), and the mean length of the
    runs of consecutive losses."""
    lost = []
    for f in (line.split() for line in log_path.read_text().splitlines()):
        if len(f) >= 3 and f[1] == "+":
            lost.append(False)
        elif len(f) >= 5 and f[1] == "d" and f[4] == "loss":
            lost[-1] = True
    runs, current = [], 0
    for x in lost + [False]:
        if x:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    return sum(lost) / len(lost), statistics.mean(runs)


def test_gilbert_elliott_loses_packets_in_bursts(link, tmp_path):
    # p = 5%, r = 30%: the chain is bad 1/7 of the time, losing everything there, in bursts
    # of 1 / r = 3.3 packets on average; Bernoulli loss at the same rate loses in "bursts" of
    # 1 / (1 - 1/7) = 1.17.
    logs = {}
    for name, kw in [("ge", dict(gemodel="5%,30%")), ("bernoulli", dict(loss=1 / 7))]:
        up, down = tmp_path / f"{name}.up.log", tmp_path / f"{name}.down.log"
        run(link, **LIGHT, **kw, seed=1, uplink_log=up, downlink_log=down)
        logs[name] = lost_bursts(down)
    (ge_rate, ge_burst), (b_rate, b_burst) = logs["ge"], logs["bernoulli"]
    assert 0.07 < ge_rate < 0.25 and 0.07 < b_rate < 0.25, logs
    assert ge_burst > 2.3, logs
    assert b_burst < 1.5, logs


def test_jitter_spreads_the_delay(link):
    plain = data_delays_ms(run(link, **LIGHT, records=True))
    jittery = data_delays_ms(run(link, **LIGHT, jitter="10ms", seed=2, records=True))
    assert np.std(plain) < 1.0, np.std(plain)
    # Uniform within +/- 10 ms: a standard deviation near 5.8 ms (order kept, which can only
    # raise a delay).
    assert 3.5 < np.std(jittery) < 9.0, np.std(jittery)
    assert jittery.min() >= plain.min() - 10.5


def test_a_delay_trace_raises_the_delay(link, delays):
    plain = data_delays_ms(run(link, **LIGHT, records=True))
    slow = data_delays_ms(run(link, **LIGHT, delay_trace=delays, records=True))
    # 20 ms of propagation by default, 80 ms from the trace; the queue adds the same little.
    assert np.median(slow) - np.median(plain) == pytest.approx(60, abs=1.5)


def test_ecn_marks_and_the_l4s_step_reaches_the_link(link, tmp_path):
    up, down = tmp_path / "up.log", tmp_path / "down.log"
    marked = run(link, load="down", queue="codel", ecn=True, l4s_step="1ms",
                 uplink_log=up, downlink_log=down)
    dropped = run(link, load="down", queue="codel")
    m = marked["downlink"]
    assert m["marks"]["aqm"] > 0 and m["drops"]["aqm"] == 0, m
    assert dropped["downlink"]["marks"]["aqm"] == 0
    assert dropped["downlink"]["drops"]["aqm"] > 0
    header = [line for line in down.read_text().splitlines() if line.startswith("#")]
    assert "# ecn: mark, l4s step 1ms" in header, header
    # The simulator's TCP peers send ECT(0) only (docs/evaluation.md), so the step, which
    # marks ECT(1) packets, marks none of them.
    assert m["marks"]["step"] == 0


def test_the_same_figures_as_sprout_sim(cli, link, delays):
    flags = dict(
        buffer="30pkt", downlink_buffer="3pkt,head", gemodel="0.5%,30%", jitter="5ms,reorder",
        delay_trace=delays, l4s_step="1ms", queue="fq-codel", fq_flows=16, codel_target="10ms",
        seed=3,
    )
    r = run(link, load="down", ecn=True, **flags)
    args = ["--scheme", "cubic", "--uplink", link[0], "--downlink", link[1], "--duration",
            SHORT["duration"], "--skip", SHORT["skip"], "--load", "down", "--ecn"]
    for k, v in flags.items():
        args += [f"--{k.replace('_', '-')}", v]
    want, text = cli.sim_json(*args)
    assert r.to_dict() == want
    assert str(r) == text.rstrip("\n")
    assert sum(r["downlink"]["drops"].values()) > 0, r["downlink"]


@pytest.mark.parametrize(
    "kw, error, says",
    [
        (dict(buffer="lots"), sprout.BadParameterError, "buffer: bad buffer 'lots'"),
        (dict(buffer=100), sprout.BadParameterError, "buffer: expected a str"),
        (dict(uplink_gemodel="2,3"), sprout.BadParameterError, "uplink_gemodel: bad gemodel"),
        (dict(jitter="5ms,shuffle"), sprout.BadParameterError, "jitter: bad jitter"),
        (dict(l4s_step="0ms"), sprout.BadParameterError, "l4s_step: expected a positive time"),
        (dict(l4s_step=0.001), sprout.BadParameterError, "l4s_step: expected a str time"),
        (dict(fq_flows=0, queue="fq-codel"), sprout.BadParameterError, "fq_flows: expected"),
        (dict(fq_quantum="300"), sprout.BadParameterError, "fq_quantum: expected an int"),
        (dict(codel_target="10ms"), sprout.BadParameterError, "codel-target"),
        (dict(delay_trace="/nonexistent/d.txt"), FileNotFoundError, "/nonexistent/d.txt"),
        (dict(bufer="10pkt"), TypeError, "unexpected keyword argument 'bufer'"),
    ],
)
def test_bad_values_are_refused_naming_the_option(link, kw, error, says):
    with pytest.raises(error) as e:
        run(link, **kw)
    assert says in str(e.value)
    if error is sprout.BadParameterError:
        assert isinstance(e.value, ValueError)


def test_a_delay_trace_that_does_not_parse(link, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("80\n")
    with pytest.raises(sprout.BadTraceError, match="delay trace"):
        run(link, delay_trace=bad)


def test_the_environment_takes_the_link_options(link):
    up, down = (sprout.Trace.load(p) for p in link)
    kw = dict(uplink=up, downlink=down, episode_seconds=2.0, random_start=False)

    def deepest_queue(**more):
        env = _sprout.Env(**kw, **more)
        env.reset(0)
        # Twice the link's rate: the queue grows as far as the buffer lets it.
        return max(env.step(2 * RATE_MBPS)[4]["queue_bytes"] for _ in range(60))

    assert deepest_queue() > 100_000
    assert deepest_queue(buffer="10pkt") <= 11 * 1500
    with pytest.raises(ValueError, match="buffer: bad buffer"):
        _sprout.Env(**kw, buffer="ten")
    with pytest.raises(ValueError, match="uplink_buffer: the environment has one link"):
        _sprout.Env(**kw, uplink_buffer="10pkt")


def test_the_gym_env_passes_them_on(link):
    sg = pytest.importorskip("sprout.gym")
    env = sg.CellularLinkEnv(uplink=link[0], downlink=link[1], episode_seconds=1.0,
                             buffer="10pkt", jitter="2ms", l4s_step="1ms")
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([2.0 * RATE_MBPS], dtype=np.float32))
    assert info["queue_bytes"] <= 11 * 1500
    with pytest.raises(ValueError, match="gemodel: bad gemodel"):
        sg.CellularLinkEnv(uplink=link[0], downlink=link[1], gemodel="lots")


def test_sweeps_take_the_l4s_step_and_the_others(link):
    spec = {
        "traces": {"name": "c12", "uplink": str(link[0]), "downlink": str(link[1])},
        "schemes": "cubic",
        "sim": {"duration": 6.0, "skip": 1.0, "load": "down", "l4s_step": ["1ms", "5ms"],
                "buffer": "20pkt"},
    }
    p = sprout.sweep.plan(spec)
    assert len(p) == 2
    header = p.header
    assert header[-6:] == ["buffer", "l4s_step", "up_buffer_drops", "down_buffer_drops",
                           "up_lost", "down_lost"]
    assert "ecn" in header and "up_marks" in header
    row = dict(zip(header, _sprout.sweep_run(p.runs()[0]).split(",")))
    assert row["l4s_step"] == "1ms" and row["buffer"] == "20pkt"
    assert int(row["down_buffer_drops"]) > 0
    with pytest.raises(ValueError, match=r"\[sim\] l4s_step: expected a positive time"):
        sprout.sweep.plan({**spec, "sim": {"l4s_step": "soon"}})
