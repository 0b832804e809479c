"""Errors are Python exceptions with the messages the `sprout` command prints, each a
`sprout.SproutError` whose subclass says the kind."""

import pytest

import sprout


def sim_error(cli, up, down, *flags):
    return cli.error("sim", "--uplink", up, "--downlink", down, *flags)


def test_sprout_error_is_a_value_error():
    assert issubclass(sprout.SproutError, ValueError)
    assert sprout.SproutError.__module__ == "sprout"


def test_each_kind_is_a_sprout_error_and_its_builtin():
    kinds = {
        sprout.BadParameterError: ValueError,
        sprout.BadTraceError: ValueError,
        sprout.SproutFileNotFoundError: FileNotFoundError,
        sprout.SproutOSError: OSError,
    }
    for kind, builtin in kinds.items():
        assert issubclass(kind, sprout.SproutError), kind
        assert issubclass(kind, builtin), kind
        assert kind.__module__ == "sprout", kind
        assert kind.__name__ in sprout.__all__, kind


def test_missing_trace_is_file_not_found(cli, synthetic_pair, tmp_path):
    up, down = synthetic_pair
    missing = tmp_path / "nope.up"
    with pytest.raises(FileNotFoundError) as e:
        sprout.simulate("sprout", missing, down)
    assert type(e.value) is sprout.SproutFileNotFoundError
    assert str(e.value) == sim_error(cli, missing, down)
    assert str(e.value).startswith(f"cannot read trace {missing}: ")
    with pytest.raises(sprout.SproutFileNotFoundError) as e:
        sprout.Trace.load(missing)
    assert str(e.value) == sim_error(cli, missing, down)


def test_folder_as_trace_is_an_os_error(cli, synthetic_pair, tmp_path):
    _, down = synthetic_pair
    with pytest.raises(OSError) as e:
        sprout.simulate("sprout", tmp_path, down)
    assert type(e.value) is sprout.SproutOSError
    assert not isinstance(e.value, FileNotFoundError)
    assert str(e.value) == sim_error(cli, tmp_path, down)


def test_malformed_trace(cli, synthetic_pair, tmp_path):
    _, down = synthetic_pair
    bad = tmp_path / "bad.up"
    bad.write_text("10\n20\nabc\n")
    with pytest.raises(sprout.BadTraceError) as e:
        sprout.simulate("sprout", bad, down)
    assert str(e.value) == sim_error(cli, bad, down)
    assert str(e.value) == f"{bad}:3: not a non-negative integer: `abc`"
    back = tmp_path / "back.up"
    back.write_text("10\n5\n")
    with pytest.raises(sprout.BadTraceError) as e:
        sprout.Trace.load(back)
    assert str(e.value) == sim_error(cli, back, down)


# (simulate's keyword options, the same options on the command line)
OPTION_ERRORS = {
    "unknown param": ({"params": {"nope": 1}}, ["--param", "nope=1"]),
    "param of the wrong type": (
        {"params": {"window_skip_ticks": "many"}}, ["--param", "window_skip_ticks=many"]),
    "param without =": ({"params": ["window_skip_ticks"]}, ["--param", "window_skip_ticks"]),
    "invalid confidence": ({"confidence": 1.5}, ["--confidence", "1.5"]),
    "confidence for cubic": (
        {"scheme": "cubic", "confidence": 0.5}, ["--scheme", "cubic", "--confidence", "0.5"]),
    "params for reno": (
        {"scheme": "reno", "params": {"model.sigma": 3}},
        ["--scheme", "reno", "--param", "model.sigma=3"]),
    "omniscient": ({"scheme": "omniscient"}, ["--scheme", "omniscient"]),
    "loss above 1": ({"loss": 2.0}, ["--loss", "2"]),
    "downlink loss": ({"downlink_loss": -0.5}, ["--downlink-loss=-0.5"]),
    "negative skip": ({"skip": -1.0}, ["--skip=-1"]),
    "negative duration": ({"duration": -3.0}, ["--duration=-3"]),
    "infinite jitter": ({"host_jitter_ms": float("inf")}, ["--host-jitter-ms", "inf"]),
}


@pytest.mark.parametrize("case", list(OPTION_ERRORS))
def test_option_errors_have_the_cli_message(case, cli, synthetic_pair):
    options, flags = OPTION_ERRORS[case]
    options = dict(options)
    scheme = options.pop("scheme", "sprout")
    with pytest.raises(sprout.BadParameterError) as e:
        sprout.simulate(scheme, *synthetic_pair, **options)
    assert str(e.value) == sim_error(cli, *synthetic_pair, *flags)


def test_unknown_scheme_queue_and_load(cli, synthetic_pair):
    # The command line's parser wraps these ("invalid value 'x' for '--scheme <SCHEME>': ...");
    # the package gives the reason itself.
    with pytest.raises(sprout.BadParameterError) as e:
        sprout.simulate("tahoe", *synthetic_pair)
    assert str(e.value).startswith("unknown scheme 'tahoe' (known: sprout, sprout-ewma, cubic")
    assert str(e.value) in sim_error(cli, *synthetic_pair, "--scheme", "tahoe")
    with pytest.raises(sprout.BadParameterError, match="unknown queue 'red'"):
        sprout.simulate("sprout", *synthetic_pair, queue="red")
    with pytest.raises(sprout.BadParameterError, match="unknown load 'sideways'"):
        sprout.simulate("sprout", *synthetic_pair, load="sideways")


def test_bad_argument_types_are_type_errors(synthetic_pair):
    with pytest.raises(TypeError, match="uplink must be a sprout.Trace or a path"):
        sprout.simulate("sprout", 42, synthetic_pair[1])
    with pytest.raises(TypeError, match="params must be"):
        sprout.simulate("sprout", *synthetic_pair, params="window_skip_ticks=0")


def test_logs_go_together(synthetic_pair, tmp_path):
    with pytest.raises(sprout.BadParameterError, match="uplink_log and downlink_log go together"):
        sprout.simulate("sprout", *synthetic_pair, uplink_log=tmp_path / "u.log")


def test_unwritable_log_is_an_os_error(cli, synthetic_pair, tmp_path):
    log = tmp_path / "missing-folder" / "u.log"
    with pytest.raises(sprout.SproutFileNotFoundError) as e:
        sprout.simulate("sprout", *synthetic_pair, uplink_log=log, downlink_log=tmp_path / "d.log",
                        duration=5, skip=0)
    assert str(e.value) == sim_error(
        cli, *synthetic_pair, "--uplink-log", log, "--downlink-log", tmp_path / "d.log",
        "--duration", "5", "--skip", "0")


def test_params_function(cli):
    with pytest.raises(sprout.BadParameterError) as e:
        sprout.params("cubic")
    assert str(e.value) == cli.error("params", "--scheme", "cubic")
    assert sprout.params("sprout", {"model.sigma": 250})["model"]["sigma"] == 250
    assert sprout.params("sprout-ewma")["estimator"] != sprout.params("sprout")["estimator"]


def test_evaluation_errors_by_kind(cli, tmp_path):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(sprout.SproutFileNotFoundError) as e:
        sprout.evaluate(traces=missing, out=tmp_path / "out")
    assert str(e.value) == cli.error("eval", "--traces", missing, "--out", tmp_path / "o")
    empty = tmp_path / "none"
    empty.mkdir()
    with pytest.raises(sprout.BadTraceError, match="no trace pairs"):
        sprout.evaluate(traces=empty, schemes=["sprout"], out=tmp_path / "out")
    with pytest.raises(sprout.BadParameterError, match="--experiments: unknown experiment"):
        sprout.evaluate(experiments=["fig99"], out=tmp_path / "out")
    with pytest.raises(sprout.BadParameterError, match="unknown key 'nope'"):
        sprout.evaluate(params=["nope=1"], out=tmp_path / "out")


def test_environment_and_trace_errors_by_kind():
    with pytest.raises(sprout.BadParameterError, match="ticks_per_step"):
        sprout._sprout.Env(ticks_per_step=0)
    with pytest.raises(sprout.BadParameterError, match="unknown queue 'red'"):
        sprout._sprout.Env(queue="red")
    with pytest.raises(sprout.BadTraceError, match="empty trace"):
        sprout.Trace.constant(0.0, 1.0)
    with pytest.raises(sprout.BadParameterError, match="interval_ms"):
        sprout.Trace.constant(12.0, 1.0).capacity(0)


def test_sweep_errors_by_kind():
    import sprout.sweep as sw

    with pytest.raises(sprout.BadParameterError, match="unknown scheme 'warp'"):
        sw.plan({"traces": [{"name": "c", "constant": {"mbps": 1, "seconds": 5}}],
                 "schemes": ["warp"]})
