//! End-to-end runs of the simulator over the paper's real traces (read from ../shared/traces;
//! skipped, and reported, when absent).

use std::path::PathBuf;
use std::sync::Arc;

use sprout_core::direction::Load;
use sprout_core::time::Duration;
use sprout_core::Config;
use sprout_eval::eval::Scheme;
use sprout_link::{testdata, MmLog, Trace};
use sprout_sim::logscore;
use sprout_sim::sim::{self, Logs, SimConfig};

/// The paper's traces in ../shared/traces; `None` (the test recorded as skipped) when absent.
fn traces() -> Option<PathBuf> {
    testdata::require("traces")
}

fn pair(dir: &std::path::Path, name: &str) -> (Arc<Trace>, Arc<Trace>) {
    (
        Arc::new(Trace::load(dir.join(format!("{name}.up"))).unwrap()),
        Arc::new(Trace::load(dir.join(format!("{name}.down"))).unwrap()),
    )
}

fn run_with_logs(
    cfg: &SimConfig,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
) -> (sim::SimOutput, Vec<u8>, Vec<u8>) {
    let (mut ul, mut dl) = (Vec::new(), Vec::new());
    let out = sim::run(
        up.clone(),
        down.clone(),
        cfg,
        Some(Logs {
            uplink: &mut ul,
            downlink: &mut dl,
        }),
    )
    .unwrap();
    (out, ul, dl)
}

#[test]
fn same_inputs_give_byte_identical_output() {
    let Some(dir) = traces() else { return };
    let (up, down) = pair(&dir, "Verizon-LTE-short");
    let cfg = SimConfig {
        duration: Some(Duration::from_secs(40)),
        skip: Duration::from_secs(10),
        ..SimConfig::default()
    };
    let (a, aul, adl) = run_with_logs(&cfg, &up, &down);
    let (b, bul, bdl) = run_with_logs(&cfg, &up, &down);
    assert_eq!(aul, bul, "uplink logs differ");
    assert_eq!(adl, bdl, "downlink logs differ");
    assert_eq!(
        serde_json::to_string(&a.downlink.metrics).unwrap(),
        serde_json::to_string(&b.downlink.metrics).unwrap()
    );
    assert!(
        aul.len() > 100_000,
        "a 40 s log has hundreds of thousands of bytes"
    );
}

#[test]
fn metrics_recomputed_from_mahimahi_logs_agree() {
    let Some(dir) = traces() else { return };
    let (up, down) = pair(&dir, "Verizon-LTE-short");
    let cfg = SimConfig {
        duration: Some(Duration::from_secs(90)),
        skip: Duration::from_secs(30),
        ..SimConfig::default()
    };
    let (out, ul, dl) = run_with_logs(&cfg, &up, &down);
    for (log, run) in [(ul, &out.uplink), (dl, &out.downlink)] {
        let log = MmLog::parse(&log[..]).unwrap();
        let m = logscore::score(&log, cfg.skip, Some(run.window.end));
        let ours = &run.metrics;
        assert!(ours.throughput_kbps > 500.0, "{ours:?}");
        assert!(
            (m.throughput_kbps - ours.throughput_kbps).abs() < 1e-6,
            "{m:?} vs {ours:?}"
        );
        assert!((m.utilization - ours.utilization).abs() < 1e-9);
        assert!(
            (m.p95_delay_ms - ours.p95_delay_ms).abs() <= 1.0,
            "{m:?} vs {ours:?}"
        );
        assert!((m.omniscient_p95_ms - ours.omniscient_p95_ms).abs() <= 1.0);
        assert!((m.self_inflicted_ms - ours.self_inflicted_ms).abs() <= 1.0);
    }
}

#[test]
fn sprout_is_more_cautious_than_sprout_ewma_on_verizon_lte() {
    let Some(dir) = traces() else { return };
    let (up, down) = pair(&dir, "Verizon-LTE-short");
    let run = |protocol: Config| {
        sim::run(
            up.clone(),
            down.clone(),
            &SimConfig {
                protocol,
                ..SimConfig::default()
            },
            None,
        )
        .unwrap()
    };
    let sprout = run(Config::default());
    let ewma = run(Config::ewma());
    for (s, e) in [
        (&sprout.uplink.metrics, &ewma.uplink.metrics),
        (&sprout.downlink.metrics, &ewma.downlink.metrics),
    ] {
        assert!(s.self_inflicted_ms < e.self_inflicted_ms, "{s:?} vs {e:?}");
        assert!(s.throughput_kbps < e.throughput_kbps, "{s:?} vs {e:?}");
        assert!((0.2..0.8).contains(&s.utilization), "{s:?}");
        assert!(s.self_inflicted_ms < 200.0, "{s:?}");
    }
}

#[test]
fn one_direction_loaded_leaves_the_other_for_feedback() {
    let Some(dir) = traces() else { return };
    let (up, down) = pair(&dir, "Verizon-LTE-short");
    let out = sim::run(
        up,
        down,
        &SimConfig {
            duration: Some(Duration::from_secs(60)),
            skip: Duration::ZERO,
            load: Load::Down,
            ..SimConfig::default()
        },
        None,
    )
    .unwrap();
    assert!(out.downlink.metrics.goodput_kbps > 100.0);
    assert_eq!(out.uplink.metrics.goodput_kbps, 0.0);
    // Heartbeats only: a few packets per 50 ms.
    assert!(out.uplink.metrics.throughput_kbps < 50.0);
}

#[test]
fn one_direction_can_have_its_own_queue_and_loss() {
    let Some(dir) = traces() else { return };
    let (up, down) = pair(&dir, "Verizon-LTE-short");
    let cfg = SimConfig {
        duration: Some(Duration::from_secs(20)),
        skip: Duration::ZERO,
        seed: 3,
        uplink: sim::DirectionOverride {
            queue: Some(sprout_link::QueueConfig::codel()),
            loss: Some(0.2),
            ..sim::DirectionOverride::default()
        },
        ..SimConfig::default()
    };
    assert_ne!(
        cfg.link_for(sim::Direction::Up).seed,
        cfg.link_for(sim::Direction::Down).seed,
        "each direction draws its own losses"
    );
    let (_, ul, dl) = run_with_logs(&cfg, &up, &down);
    let (ul, dl) = (
        String::from_utf8(ul).unwrap(),
        String::from_utf8(dl).unwrap(),
    );
    let drops = |log: &str| {
        log.lines()
            .filter(|l| l.split(' ').nth(1) == Some("d"))
            .count()
    };
    assert!(ul.contains("codel"), "the uplink log names its CoDel queue");
    assert!(!dl.contains("codel"));
    assert!(
        drops(&ul) > 100,
        "20% loss on the uplink: {} drops",
        drops(&ul)
    );
    assert_eq!(drops(&dl), 0, "the downlink keeps the default: no loss");
}

#[test]
fn a_run_ends_with_the_shorter_trace_unless_told_otherwise() {
    // 10 s of uplink against 20 s of downlink, one opportunity per millisecond each way.
    let trace = |name: &str, ms: u64| {
        Arc::new(Trace::from_opportunities_ms(name, (1..=ms).collect()).unwrap())
    };
    let (up, down) = (trace("short.up", 10_000), trace("long.down", 20_000));
    assert_eq!(sim::default_duration_us(&up, &down), 10_000_000);
    let cfg = SimConfig {
        skip: Duration::ZERO,
        ..SimConfig::default()
    };
    let out = sim::run(up.clone(), down.clone(), &cfg, None).unwrap();
    assert_eq!(out.duration.as_micros(), 10_000_000);
    // The downlink is scored over the 10 s the run lasted, not its trace's 20 s.
    assert!(
        (out.downlink.metrics.window_s - 10.0).abs() < 1e-9,
        "{}",
        out.downlink.metrics.window_s
    );
    assert!(out
        .downlink
        .arrivals
        .iter()
        .all(|a| a.arrived.as_micros() <= 10_000_000));
    // An explicit duration still wins (the shorter trace then loops).
    let cfg = SimConfig {
        duration: Some(Duration::from_secs(15)),
        ..cfg
    };
    let out = sim::run(up, down, &cfg, None).unwrap();
    assert_eq!(out.duration.as_micros(), 15_000_000);
    assert!(out.downlink.metrics.window_s > 14.9);
}

/// The hosts' timer latency models Sprout's user-space event loop: it changes a Sprout run, and
/// leaves a TCP peer (a kernel stack, BBR's pacing timers included) exactly on time.
#[test]
fn host_jitter_delays_sprout_hosts_and_not_tcp_peers() {
    let Some(dir) = traces() else { return };
    let (up, down) = pair(&dir, "Verizon-LTE-short");
    let run = |scheme: Scheme, jitter_us: u64| {
        let mut cfg = SimConfig {
            duration: Some(Duration::from_secs(30)),
            skip: Duration::from_secs(5),
            host_jitter: Duration::from_micros(jitter_us),
            ..SimConfig::default()
        };
        scheme.configure(&mut cfg);
        let (_, ul, dl) = run_with_logs(&cfg, &up, &down);
        (ul, dl)
    };
    assert_ne!(run(Scheme::Sprout, 0), run(Scheme::Sprout, 1_000));
    assert_eq!(run(Scheme::Bbr, 0), run(Scheme::Bbr, 1_000));
}
