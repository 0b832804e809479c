//! The comparison's pieces on small made-up traces.

use std::path::PathBuf;

use sprout_link::Trace;

use super::*;

#[test]
fn per_second_counts_and_outage_seconds() {
    // Opportunities at 0.1, 0.5, 1.2 s, then nothing until 3.5 s (a 2.3 s gap), 3.6, 4.9.
    let ops = [100u64, 500, 1200, 3500, 3600, 4900];
    let counts = per_second_counts(ops.iter().map(|&t| t as i64), 0, 5);
    assert_eq!(counts, [2, 1, 0, 2, 1]);
    // The gap (1.2, 3.5) overlaps seconds 1, 2 and 3; (3.6, 4.9) is 1.3 s: seconds 3, 4.
    assert_eq!(
        outage_seconds(&ops, 0, 5, 1000),
        [false, true, true, true, true]
    );
    // A window starting later.
    assert_eq!(outage_seconds(&ops, 4000, 2, 1000), [true, false]);
    // Before the first opportunity.
    assert_eq!(outage_seconds(&[1500, 1600], 0, 2, 1000), [true, true]);
    assert_eq!(outage_seconds(&[10, 20, 900], 0, 1, 1000), [false]);
}

#[test]
fn comparison_within_5_percent_and_2_percent_total() {
    // 4 seconds of 100 opportunities each; the recording misses 4 in second 0 (4%) and 6
    // in second 2 (6%): 3 of 4 seconds within 5% (75%), total -2.5%.
    let mut ops = Vec::new();
    for s in 0..4u64 {
        for i in 0..100 {
            ops.push(s * 1000 + i * 10);
        }
    }
    let rec: Vec<i64> = ops
        .iter()
        .enumerate()
        .filter(|(i, _)| !(*i < 4 || (200..206).contains(i)))
        .map(|(_, &t)| t as i64)
        .collect();
    let c = compare_seconds(&rec, &ops, 0, 4);
    assert_eq!((c.seconds_within, c.outage_seconds), (3, 0));
    assert!(!c.per_second_ok);
    assert!((c.total_error + 0.025).abs() < 1e-12);
    assert!(!c.total_ok);
    assert!((c.exact_ms_share - 1.0).abs() < 1e-12);
    let c = compare_seconds(
        &ops.iter().map(|&t| t as i64).collect::<Vec<_>>(),
        &ops,
        0,
        4,
    );
    assert!(c.per_second_ok && c.total_ok);
}

#[test]
fn alignment_finds_the_whole_millisecond_offset() {
    let ops: Vec<u64> = (0..500).map(|i| 2000 + i * 7 + (i % 3)).collect();
    // The recording started 1003.6 ms into the replay; its arrivals land 0.2 ms after their
    // opportunities: recorded ms = floor(t - 1003.6 + 0.2) = t - 1004.
    let rec: Vec<u32> = ops.iter().map(|&t| (t - 1004) as u32).collect();
    assert_eq!(align_offset_ms(&rec, &ops, 1003), 1004);
    assert_eq!(align_offset_ms(&rec, &ops, 1005), 1004);
}

#[test]
fn medians() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&[]), 0.0);
}

#[test]
fn injected_outage_removes_opportunities() {
    let t = Trace::from_opportunities_ms("x", (0..100).map(|i| i * 100).collect()).unwrap();
    let o = with_outage(&t, 2000, 3000).unwrap();
    assert_eq!(o.len(), 70);
    assert!(o
        .opportunities_ms()
        .iter()
        .all(|&x| !(2000..5000).contains(&x)));
    let opts = CheckOptions {
        traces: PathBuf::new(),
        links: vec![],
        seconds: 120,
        from_s: 1,
        loss: 0.05,
        outage_s: 10,
        seed: 1,
        simulated: true,
        out: PathBuf::new(),
        sprout_exe: PathBuf::new(),
        same_path: false,
        realtime: false,
        progress: false,
    };
    assert_eq!(opts.outage_ms(), (56_000, 10_000));
    assert_eq!(opts.variant(), "loss 5% + 10 s outage");
    assert_eq!(opts.record_s(), 122);
}
