use std::sync::Arc;

use sprout_core::time::{Duration, Instant};
use sprout_link::{constant_rate_trace, SyntheticLink};

use super::*;
use crate::app::App;

/// A constant link of `mbps` both ways.
fn constant(mbps: f64, seconds: f64) -> LinkSource {
    let t = Arc::new(constant_rate_trace("constant", mbps, seconds).unwrap());
    LinkSource::Traces {
        uplink: t.clone(),
        downlink: t,
    }
}

fn verizon_like() -> LinkSource {
    LinkSource::Synthetic(SyntheticLink::default())
}

fn run(env: &mut RlEnv, actions: impl Fn(usize, &[f32]) -> f64) -> Vec<(Vec<f32>, StepInfo)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let a = actions(i, env.observation());
        let o = env.step(a);
        out.push((env.observation().to_vec(), o.info));
        i += 1;
        if o.truncated {
            break;
        }
    }
    out
}

#[test]
fn same_seed_same_actions_identical_episode() {
    for source in [constant(6.0, 120.0), verizon_like()] {
        let mut cfg = EnvConfig::new(source);
        cfg.episode = Duration::from_secs(5);
        cfg.link.loss = 0.02;
        let mut a = RlEnv::new(cfg.clone()).unwrap();
        let mut b = RlEnv::new(cfg).unwrap();
        let policy = |i: usize, o: &[f32]| 2.0 + (i % 7) as f64 + f64::from(o[8]) * 0.01;
        a.reset(42).unwrap();
        b.reset(42).unwrap();
        let ra = run(&mut a, policy);
        let rb = run(&mut b, policy);
        assert_eq!(ra.len(), 250);
        assert_eq!(ra, rb);
        assert_eq!(a.arrivals(), b.arrivals());
        // Another seed gives another episode (another start; other losses).
        b.reset(43).unwrap();
        let rc = run(&mut b, policy);
        assert_ne!(ra, rc);
        // And the first seed again gives the first episode again.
        b.reset(42).unwrap();
        assert_eq!(run(&mut b, policy), ra);
    }
}

#[test]
fn random_start_is_drawn_from_the_seed_within_the_trace() {
    let mut cfg = EnvConfig::new(constant(6.0, 100.0));
    cfg.episode = Duration::from_secs(10);
    let mut env = RlEnv::new(cfg).unwrap();
    let mut starts = Vec::new();
    for seed in 0..20 {
        env.reset(seed).unwrap();
        assert!(env.start() <= Instant::from_millis(90_000));
        assert_eq!(env.start().as_micros() % 1000, 0);
        starts.push(env.start());
    }
    starts.sort_unstable();
    starts.dedup();
    assert!(starts.len() >= 18, "{starts:?}");
}

/// Constant 12 Mbit/s link (one 1500-byte opportunity per ms), 20 ms propagation, a fixed
/// rate of 6 Mbit/s (one packet every 2 ms): every packet finds the queue empty and leaves
/// at the first opportunity after it enters, so its one-way delay is 20 ms plus less than
/// 1 ms, for the whole episode; the throughput is the rate.
#[test]
fn below_capacity_no_delay_growth() {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(10);
    cfg.random_start = false;
    let mut env = RlEnv::new(cfg).unwrap();
    let steps = run(&mut env, |_, _| 6.0);
    let arrivals = env.arrivals();
    // Packets sent at 0, 2, ..., 9980 ms arrive 20 ms later, by the end at 10 s.
    assert_eq!(arrivals.len(), 4991);
    for a in arrivals {
        let owd = a.arrived - a.sent;
        assert!(
            (Duration::from_millis(20)..=Duration::from_millis(21)).contains(&owd),
            "{a:?}"
        );
    }
    // After the first 20 ms (propagation) every step delivers 10 packets = 6 Mbit/s.
    for (_, info) in &steps[2..] {
        assert!((info.throughput_mbps - 6.0).abs() < 1e-9, "{info:?}");
        assert_eq!(info.lost_bytes, 0);
        assert!(info.queue_bytes <= 1500);
        // The delay function stays between 20 and 22 ms: the step's mean does.
        assert!((0.020..=0.022).contains(&info.delay_s), "{info:?}");
    }
    let m = env.episode_metrics(Duration::from_secs(1));
    assert!((m.throughput_kbps - 6000.0).abs() < 1.0, "{m:?}");
    assert!(m.p95_delay_ms <= 22.0, "{m:?}");
}

/// Constant 12 Mbit/s (1000 packets/s), a fixed 18 Mbit/s (1500 packets/s): the queue grows
/// by 500 packets per second, so the packet sent at time s waits 0.5 s of queue per second
/// of s: its one-way delay is 20 ms + s/2 (within one opportunity). Delivery runs at the
/// capacity (packet n leaves at 20 + n ms), so the delay function at t (ms, whole) is
/// t - (t - 20) / 1.5, which grows by 1/3 s per second; the omniscient's is 20 ms.
#[test]
fn above_capacity_delay_grows_at_the_hand_computed_rate() {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(4);
    cfg.random_start = false;
    cfg.feedback = FeedbackPath::Instant;
    let mut env = RlEnv::new(cfg).unwrap();
    let steps = run(&mut env, |_, _| 18.0);
    for a in env.arrivals() {
        let expected = 20_000.0 + a.sent.as_micros() as f64 * 0.5;
        let owd = (a.arrived - a.sent).as_micros() as f64;
        assert!(
            (owd - expected).abs() <= 1_001.0,
            "{a:?}: {owd} vs {expected}"
        );
    }
    // The link is busy from the first entry on: one packet per ms.
    for (_, info) in &steps[2..] {
        assert!((info.throughput_mbps - 12.0).abs() < 1e-9, "{info:?}");
    }
    // The step ending at 2 s: the delay function at t is t - s(t) with s(t) the send time
    // of the packet arriving at t: t = 20 ms + 1.5 s(t), so delay = t - (t - 0.02) / 1.5;
    // at t = 2 s, 0.68 s. Minus the omniscient's 20 ms (plus up to 1 ms): about 0.66 s.
    let (_, at2) = steps[99];
    assert!((at2.time_s - 2.0).abs() < 1e-9);
    let t = 1.9905f64; // the step's samples are 1.981..2.000 s, mean 1.9905
    let expected = t - (t - 0.02) / 1.5 - 0.02;
    assert!(
        (at2.self_inflicted_s - expected).abs() < 0.002,
        "{} vs {expected}",
        at2.self_inflicted_s
    );
    // Growth between consecutive seconds: (t+1) - (t+1-0.02)/1.5 - (t - (t-0.02)/1.5) = 1/3.
    let (_, at3) = steps[149];
    assert!(
        (at3.self_inflicted_s - at2.self_inflicted_s - 1.0 / 3.0).abs() < 0.002,
        "{at2:?} {at3:?}"
    );
    // With instant feedback the observed delay is the receiver's delay function at the
    // step's end, and the queue (in flight) estimate is what was sent but not delivered.
    let (obs, info) = &steps[149];
    let t = 3.0;
    let delay = t - (t - 0.02) / 1.5;
    assert!((f64::from(obs[2]) / 1e3 - delay).abs() < 0.002, "{obs:?}");
    assert!((obs[0] - 12.0).abs() < 1e-4, "{obs:?}");
    assert!(info.queue_bytes > 0);
}

#[test]
fn window_mode_keeps_the_window_in_flight() {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(3);
    cfg.random_start = false;
    cfg.action = ActionKind::Window;
    let mut env = RlEnv::new(cfg).unwrap();
    // 30 kB = 20 packets, far below the 12 Mbit/s link's capacity. A packet's loop is
    // 20 ms out, up to 20 ms to the end of the tick that reports it, 20 ms back: 40 to
    // 60 ms, so the throughput lies between 20 packets / 60 ms = 4 Mbit/s and
    // 20 packets / 40 ms = 6 Mbit/s.
    let steps = run(&mut env, |_, _| 30.0);
    let late: Vec<&StepInfo> = steps[50..].iter().map(|(_, i)| i).collect();
    let mean: f64 = late.iter().map(|i| i.throughput_mbps).sum::<f64>() / late.len() as f64;
    assert!((4.0 - 1e-9..=6.0 + 1e-9).contains(&mean), "{mean}");
    for (obs, _) in &steps {
        assert!(obs[5] <= 30.0, "in flight {}", obs[5]);
    }
    // A window of more than the bandwidth-delay product fills the link.
    let mut env2 = RlEnv::new(env.config().clone()).unwrap();
    let steps = run(&mut env2, |_, _| 300.0);
    let tail: f64 = steps[50..]
        .iter()
        .map(|(_, i)| i.throughput_mbps)
        .sum::<f64>()
        / 100.0;
    assert!((tail - 12.0).abs() < 1e-6, "{tail}");
}

#[test]
fn forecast_follows_the_link() {
    // A sender well above capacity keeps the queue backlogged: every tick sees the
    // link's 20 packets, and the model's cautious 1-tick forecast lands a little below.
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(2);
    cfg.random_start = false;
    let mut env = RlEnv::new(cfg).unwrap();
    let steps = run(&mut env, |_, _| 20.0);
    let (obs, _) = steps.last().unwrap();
    let names = env.observation_names();
    assert_eq!(names.len(), 16);
    assert_eq!(names[8], "forecast_1");
    assert!((12.0..=20.0).contains(&obs[8]), "{obs:?}");
    assert!(obs[15] >= 100.0 && obs[15] <= 160.0, "{obs:?}");
    assert!((env.estimated_rate_pps() - 1000.0).abs() < 100.0);
    // Reports cross the reverse link: 20 ms propagation, so the latest is 20-40 ms old.
    assert!((20.0..=40.0).contains(&obs[7]), "{obs:?}");
}

#[test]
fn idle_sender_does_not_teach_the_model_an_outage() {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(3);
    cfg.random_start = false;
    cfg.feedback = FeedbackPath::Instant;
    let mut env = RlEnv::new(cfg).unwrap();
    for _ in 0..50 {
        env.step(10.0);
    }
    let busy = env.estimated_rate_pps();
    for _ in 0..25 {
        env.step(0.0);
    }
    // Half a second of silence, with nothing of ours on the link: the model only evolves
    // (spreads), it does not observe empty ticks as an outage.
    let idle = env.estimated_rate_pps();
    assert!(idle > 0.7 * busy, "{busy} -> {idle}");
    // Losses through a full loss link are reported as such.
    let mut cfg = env.config().clone();
    cfg.link.loss = 0.5;
    let mut lossy = RlEnv::new(cfg).unwrap();
    for _ in 0..100 {
        lossy.step(6.0);
    }
    let loss_rate = lossy.observation()[4];
    assert!(loss_rate > 0.2 && loss_rate < 0.8, "{loss_rate}");
}

#[test]
fn steps_of_several_ticks_add_up() {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(1);
    cfg.random_start = false;
    let mut one = RlEnv::new(cfg.clone()).unwrap();
    cfg.ticks_per_step = 5;
    let mut five = RlEnv::new(cfg).unwrap();
    let a = run(&mut one, |_, _| 9.0);
    let b = run(&mut five, |_, _| 9.0);
    assert_eq!(a.len(), 50);
    assert_eq!(b.len(), 10);
    // The same sends and deliveries whatever the step length.
    assert_eq!(one.arrivals(), five.arrivals());
    let delivered =
        |v: &[(Vec<f32>, StepInfo)]| -> u64 { v.iter().map(|(_, i)| i.delivered_bytes).sum() };
    assert_eq!(delivered(&a), delivered(&b));
    // The self-inflicted delay is a mean over the step's instants: 5 one-tick steps
    // average to the five-tick step.
    for k in 0..10 {
        let mean: f64 = a[5 * k..5 * k + 5]
            .iter()
            .map(|(_, i)| i.self_inflicted_s)
            .sum::<f64>()
            / 5.0;
        assert!((mean - b[k].1.self_inflicted_s).abs() < 1e-9);
    }
}

#[test]
fn actions_are_clipped_and_configs_checked() {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.random_start = false;
    let mut env = RlEnv::new(cfg.clone()).unwrap();
    assert_eq!(env.step(f64::NAN).info.action, 0.0);
    assert_eq!(env.step(-3.0).info.action, 0.0);
    assert_eq!(env.step(1e9).info.action, DEFAULT_MAX_RATE_MBPS);
    let bad = |f: &dyn Fn(&mut EnvConfig)| {
        let mut c = cfg.clone();
        f(&mut c);
        RlEnv::new(c).is_err()
    };
    assert!(bad(&|c| c.ticks_per_step = 0));
    assert!(bad(&|c| c.episode = Duration::from_millis(1)));
    assert!(bad(&|c| c.episode = MAX_EPISODE + Duration::from_micros(1)));
    assert!(bad(&|c| c.max_rate_mbps = f64::NAN));
    assert!(bad(&|c| c.packet_bytes = 0));
    assert!(bad(&|c| c.link.loss = 2.0));
    assert!(bad(&|c| c.reward.delay = f64::INFINITY));
    assert!(!bad(&|c| c.ticks_per_step = 3));
}

/// FNV-1a over a bulk episode's observations and step figures (those StepInfo had before
/// applications came in), for a fixed seed and policy in both action modes.
fn bulk_episode_digest(action: ActionKind) -> u64 {
    let mut cfg = EnvConfig::new(verizon_like());
    cfg.episode = Duration::from_secs(3);
    cfg.link.loss = 0.01;
    cfg.action = action;
    let mut env = RlEnv::new(cfg).unwrap();
    env.reset(7).unwrap();
    let policy = |i: usize, o: &[f32]| 1.0 + (i % 11) as f64 * 1.5 + f64::from(o[8]) * 0.1;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for (obs, i) in run(&mut env, policy) {
        obs.iter().for_each(|x| eat(u64::from(x.to_bits())));
        for f in [
            i.time_s,
            i.throughput_mbps,
            i.capacity_mbps,
            i.delay_s,
            i.self_inflicted_s,
            i.action,
            i.reward,
        ] {
            eat(f.to_bits());
        }
        for n in [i.sent_bytes, i.delivered_bytes, i.lost_bytes, i.queue_bytes] {
            eat(n);
        }
    }
    h
}

/// A bulk sender's episodes are the ones the environment gave before applications came
/// in, bit for bit (digests taken from the code before the change). The window mode's
/// digest was retaken when the environment came to run on the simulator's one loop
/// ([`crate::sim_loop`], issue 35): its own loop was not causal. Each tick it took in every
/// report arriving in the whole tick `(T, T + tick]` before sending at `T`, so the window
/// it sent at `T` counted acknowledgements that had not arrived yet. The loop sends at each
/// instant with only what has reached the sender by then. The rate mode's is unchanged.
#[test]
fn bulk_episodes_are_unchanged() {
    assert_eq!(
        format!("{:016x}", bulk_episode_digest(ActionKind::Rate)),
        "69a092d391764f95"
    );
    assert_eq!(
        format!("{:016x}", bulk_episode_digest(ActionKind::Window)),
        "cb6c0f7c37ecb1d4"
    );
}

/// An environment over a constant 12 Mbit/s link (20 ms each way) whose sender is driven
/// by `app`, starting at 0, with instant feedback.
fn app_env(app: &str, action: ActionKind, seconds: u64) -> RlEnv {
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.episode = Duration::from_secs(seconds);
    cfg.random_start = false;
    cfg.action = action;
    cfg.app = App::parse(app).unwrap();
    RlEnv::new(cfg).unwrap()
}

/// A 3 Mbit/s stream of 1200-byte datagrams (one every 3.2 ms), paced at 6 Mbit/s over a
/// 12 Mbit/s link: each datagram leaves when it is created and waits at most one
/// opportunity (1 ms), so its application-level delay is 20-21 ms, and the link carries
/// the application's rate, not the pacer's.
#[test]
fn a_stream_below_the_rate_is_delivered_at_network_delay() {
    let mut env = app_env("constant:rate=3M", ActionKind::Rate, 4);
    let steps = run(&mut env, |_, _| 6.0);
    for (_, i) in &steps[5..] {
        assert!((i.app_offered_mbps - 3.0).abs() < 0.4, "{i:?}");
        assert!(i.app_backlog_bytes <= 1200, "{i:?}");
        let p95 = i.app_p95_ms.unwrap();
        assert!((20.0..=21.0).contains(&p95), "{i:?}");
        assert_eq!(i.app_within_150ms, Some(1.0));
        assert!(i.app_messages >= 6 && i.app_messages <= 7, "{i:?}");
        assert!((i.throughput_mbps - 2.88).abs() < 0.6, "{i:?}");
    }
    // Every datagram is application bytes: 1200 on the wire.
    assert!(env.arrivals().iter().all(|a| a.bytes == 1200));
    let m = env.app_metrics(Duration::from_secs(1)).unwrap();
    assert_eq!(m.messages, 937); // created in [1 s, 4 s): 3 s / 3.2 ms, rounded up
    assert!((m.offered_kbps - 3000.0).abs() < 5.0, "{m:?}");
    assert!(m.delay_p95_ms <= 21.0 && m.delay_p50_ms >= 20.0, "{m:?}");
    // The last datagrams are still in flight at the end: infinitely late so far.
    assert!(m.delivered_share > 0.99 && m.delivered_share < 1.0, "{m:?}");
    let tput = env.episode_metrics(Duration::from_secs(1)).throughput_kbps;
    assert!((tput - 3000.0).abs() < 50.0, "{tput}");
}

/// The same stream paced at 1.5 Mbit/s: the sender's queue grows by 1.5 Mbit/s, so the
/// application-level delay grows by half a second per second while the network's delay
/// stays at its least (the reward's self-inflicted delay is only the delay function's
/// sawtooth between datagrams 6.4 ms apart: 3.2 ms on average).
#[test]
fn a_stream_above_the_rate_waits_in_the_sender() {
    let mut env = app_env("constant:rate=3M", ActionKind::Rate, 4);
    let steps = run(&mut env, |_, _| 1.5);
    let (_, last) = steps.last().unwrap();
    // 4 s x 1.5 Mbit/s = 750 kB waiting (within a datagram or two).
    assert!(
        (last.app_backlog_bytes as f64 - 750_000.0).abs() < 3_000.0,
        "{last:?}"
    );
    // Completed at ~4 s: created at t with 3.2 ms spacing, sent at 2 t: waited ~2 s.
    let p50 = last.app_p50_ms.unwrap();
    assert!((1_950.0..=2_050.0).contains(&p50), "{last:?}");
    assert_eq!(last.app_within_150ms, Some(0.0));
    assert!(last.self_inflicted_s < 0.004, "{last:?}");
    assert!((last.throughput_mbps - 1.44).abs() < 0.3, "{last:?}");
    let m = env.app_metrics(Duration::ZERO).unwrap();
    assert!(m.delivered_share < 0.55, "{m:?}");
    assert_eq!(m.delay_p95_ms, f64::INFINITY);
}

#[test]
fn window_mode_sends_each_message_as_it_comes() {
    // 60 kB of window, far above what a 3 Mbit/s stream keeps in flight (~15 kB over a
    // 40-60 ms loop): every datagram leaves at its creation.
    let mut env = app_env("constant:rate=3M", ActionKind::Window, 3);
    let steps = run(&mut env, |_, _| 60.0);
    let m = env.app_metrics(Duration::from_millis(500)).unwrap();
    assert!(m.delay_p95_ms <= 21.0 && m.delay_p50_ms >= 20.0, "{m:?}");
    assert!(steps[10..].iter().all(|(_, i)| i.app_backlog_bytes <= 1200));
    // A 6 kB window (five datagrams) is below that: the sender's queue grows.
    let mut env = app_env("constant:rate=3M", ActionKind::Window, 3);
    run(&mut env, |_, _| 6.0);
    let m = env.app_metrics(Duration::from_millis(500)).unwrap();
    assert!(m.delay_p50_ms > 200.0, "{m:?}");
    assert!(env.app_backlog_bytes() > 100_000);
}

#[test]
fn video_frames_are_messages_cut_into_datagrams() {
    // 2 Mbit/s at 25 frames/s: 10 kB frames (key frames 5 times that every 2 s) in
    // datagrams of at most 1500 bytes, paced at 10 Mbit/s.
    let mut env = app_env("video:rate=2M,fps=25,key=2", ActionKind::Rate, 4);
    run(&mut env, |_, _| 10.0);
    let m = env.app_metrics(Duration::ZERO).unwrap();
    assert_eq!(m.messages, 100);
    assert!((m.offered_kbps - 2000.0).abs() < 100.0, "{m:?}");
    assert!(env.arrivals().iter().all(|a| a.bytes <= 1500));
    assert!(env.arrivals().len() > 100 * 6);
    // A 10 kB frame's seven datagrams leave 1.2 ms apart: ~28 ms; a 41 kB key frame
    // takes 33 ms more to send.
    assert!(m.delay_p50_ms > 25.0 && m.delay_p50_ms < 35.0, "{m:?}");
    assert!(m.delay_p99_ms > 50.0 && m.delay_p99_ms < 90.0, "{m:?}");
}

#[test]
fn adaptive_video_sizes_frames_by_the_rate() {
    // At 4 Mbit/s and 25 frames/s a frame is 20 kB: the application offers the rate.
    let mut env = app_env("adaptive:fps=25", ActionKind::Rate, 3);
    let steps = run(&mut env, |_, _| 4.0);
    let m = env.app_metrics(Duration::ZERO).unwrap();
    assert!((m.offered_kbps - 4000.0).abs() < 200.0, "{m:?}");
    let mean: f64 = steps[25..]
        .iter()
        .map(|(_, i)| i.throughput_mbps)
        .sum::<f64>()
        / (steps.len() - 25) as f64;
    assert!((mean - 4.0).abs() < 0.3, "{mean}");
    // Halve the rate and the frames halve.
    let mut env = app_env("adaptive:fps=25", ActionKind::Rate, 3);
    run(&mut env, |_, _| 2.0);
    let half = env.app_metrics(Duration::ZERO).unwrap();
    assert!((half.offered_kbps - 2000.0).abs() < 150.0, "{half:?}");
}

#[test]
fn app_episodes_are_deterministic_and_bulk_has_no_app_figures() {
    for action in [ActionKind::Rate, ActionKind::Window] {
        let mut cfg = EnvConfig::new(verizon_like());
        cfg.episode = Duration::from_secs(3);
        cfg.link.loss = 0.01;
        cfg.action = action;
        cfg.app = App::parse("video:rate=1M").unwrap();
        let mut a = RlEnv::new(cfg.clone()).unwrap();
        let mut b = RlEnv::new(cfg).unwrap();
        let policy = |i: usize, o: &[f32]| 1.0 + (i % 11) as f64 * 1.5 + f64::from(o[8]) * 0.1;
        a.reset(7).unwrap();
        b.reset(7).unwrap();
        let (ra, rb) = (run(&mut a, policy), run(&mut b, policy));
        assert_eq!(ra, rb);
        assert_eq!(a.app_metrics(Duration::ZERO), b.app_metrics(Duration::ZERO));
        assert!(ra.iter().any(|(_, i)| i.app_messages > 0));
    }
    let mut bulk = app_env("bulk", ActionKind::Rate, 1);
    let steps = run(&mut bulk, |_, _| 6.0);
    assert!(bulk.app_metrics(Duration::ZERO).is_none());
    assert!(steps
        .iter()
        .all(|(_, i)| i.app_p95_ms.is_none() && i.app_messages == 0 && i.app_offered_mbps == 0.0));
    let mut cfg = EnvConfig::new(constant(12.0, 60.0));
    cfg.app = App::Constant {
        rate_bps: f64::NAN,
        packet_bytes: 1200,
    };
    assert!(RlEnv::new(cfg.clone()).is_err());
    cfg.app = App::parse("constant:rate=10G,packet=1").unwrap();
    let e = RlEnv::new(cfg).unwrap_err().to_string();
    assert!(e.contains("datagrams in an episode"), "{e}");
}
