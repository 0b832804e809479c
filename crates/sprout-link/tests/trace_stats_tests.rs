//! `trace_stats` on small traces worked out by hand: duration, mean and peak rate, per-second
//! counts, outages, the inter-arrival histogram; its errors; and the CSV conversion and the
//! outage overlay checked through it.

use std::io::Write;

use sprout_link::convert::{throughput_csv_to_trace, Column, CsvOptions};
use sprout_link::synthetic::OutageOverlay;
use sprout_link::trace_stats::{
    details_text, load_stats, summary_table, trace_stats, HistogramBin, Outage, StatsError,
    StatsOptions,
};
use sprout_link::{constant_rate_trace, Trace};

fn stats(text: &str, options: StatsOptions) -> sprout_link::trace_stats::TraceStats {
    trace_stats(&Trace::parse("t", text).unwrap(), &options).unwrap()
}

fn bin(from_ms: u64, to_ms: u64, count: u64, of: u64) -> HistogramBin {
    HistogramBin {
        from_ms,
        to_ms,
        count,
        share: count as f64 / of as f64,
    }
}

/// Eight opportunities: 0, 0, 1, 3, 10, 1500, 1501, 3000 ms.
const SMALL: &str = "0\n0\n1\n3\n10\n1500\n1501\n3000\n";

#[test]
fn small_trace_by_hand() {
    let s = stats(SMALL, StatsOptions::default());
    assert_eq!(s.duration_ms, 3000);
    assert_eq!(s.opportunities, 8);
    assert_eq!(s.bytes, 12_000);
    // 8 x 12,000 bits over 3 s = 32 kbit/s.
    assert!((s.mean_rate_kbps - 32.0).abs() < 1e-12);
    // Seconds: [0,1000) holds 0,0,1,3,10; [1000,2000) 1500,1501; [2000,3000) none; 3000 alone.
    assert_eq!(s.per_second_counts, vec![5, 2, 0, 1]);
    assert_eq!(s.bin_counts, s.per_second_counts);
    assert_eq!(s.peak_bin_count, 5);
    assert_eq!(s.peak_second_count, 5);
    assert_eq!(s.peak_bin_start_ms, 0);
    assert!((s.peak_rate_kbps - 60.0).abs() < 1e-12);

    // Gaps: 0, 1, 2, 7, 1490, 1, 1499 ms.
    let ia = &s.interarrival;
    assert_eq!(ia.intervals, 7);
    assert!((ia.mean_ms - 3000.0 / 7.0).abs() < 1e-9);
    // Sorted: 0 1 1 2 7 1490 1499; nearest rank.
    assert_eq!(ia.p50_ms, 2);
    assert_eq!(ia.p90_ms, 1499);
    assert_eq!(ia.max_ms, 1499);
    assert!((ia.share_within_20ms - 5.0 / 7.0).abs() < 1e-12);
    let mut want = vec![
        bin(0, 1, 1, 7),
        bin(1, 2, 2, 7),
        bin(2, 4, 1, 7),
        bin(4, 8, 1, 7),
    ];
    for k in 3..10 {
        want.push(bin(1 << k, 1 << (k + 1), 0, 7));
    }
    want.push(bin(1024, 2048, 2, 7));
    assert_eq!(ia.histogram, want);
    assert_eq!(ia.histogram[2].label(), "2-3 ms");
    assert_eq!(ia.histogram[1].label(), "1 ms");
    let shares: f64 = ia.histogram.iter().map(|b| b.share).sum();
    assert!((shares - 1.0).abs() < 1e-12);

    // Outages of 1 s or more: 10 -> 1500 and 1501 -> 3000.
    let o = &s.outages;
    assert_eq!(
        o.list,
        vec![
            Outage {
                start_ms: 10,
                length_ms: 1490
            },
            Outage {
                start_ms: 1501,
                length_ms: 1499
            }
        ]
    );
    assert_eq!((o.count, o.longest_ms, o.total_ms), (2, 1499, 2989));
    assert!((o.share_of_time - 2989.0 / 3000.0).abs() < 1e-12);
    assert_eq!(o.longest_gap_ms, 1499);
}

#[test]
fn thresholds_and_bins_are_options() {
    let at = |threshold| {
        stats(
            SMALL,
            StatsOptions {
                outage_threshold_ms: threshold,
                ..StatsOptions::default()
            },
        )
        .outages
    };
    assert_eq!(at(1490).count, 2);
    assert_eq!(at(1491).count, 1);
    assert_eq!(at(1491).longest_ms, 1499);
    assert_eq!(at(1500).count, 0);
    assert_eq!(at(1500).longest_ms, 0);
    assert_eq!(at(1500).longest_gap_ms, 1499);
    assert_eq!(at(7).count, 3);

    // 500 ms bins: 0,0,1,3,10 | - | - | 1500,1501 | - | - | 3000.
    let s = stats(
        SMALL,
        StatsOptions {
            bin_ms: 500,
            ..StatsOptions::default()
        },
    );
    assert_eq!(s.bin_counts, vec![5, 0, 0, 2, 0, 0, 1]);
    assert_eq!(s.per_second_counts, vec![5, 2, 0, 1]);
    assert!((s.peak_rate_kbps - 120.0).abs() < 1e-12);
    // The first of equal peaks: 1 ms bins of 0,0 (count 2) and nothing larger.
    let s = stats(
        "5\n5\n9\n9\n20\n",
        StatsOptions {
            bin_ms: 1,
            ..StatsOptions::default()
        },
    );
    assert_eq!((s.peak_bin_start_ms, s.peak_bin_count), (5, 2));
    assert!((s.peak_rate_kbps - 24_000.0).abs() < 1e-9);
}

#[test]
fn a_late_first_line_is_an_outage_from_the_start() {
    let s = stats("5000\n5001\n6000\n", StatsOptions::default());
    assert_eq!(s.duration_ms, 6000);
    assert_eq!(
        s.outages.list,
        vec![Outage {
            start_ms: 0,
            length_ms: 5000
        }]
    );
    assert!((s.outages.share_of_time - 5000.0 / 6000.0).abs() < 1e-12);
    assert_eq!(s.per_second_counts, vec![0, 0, 0, 0, 0, 2, 1]);
    // The start is not an interval between opportunities.
    assert_eq!(s.interarrival.intervals, 2);
    assert_eq!(s.interarrival.max_ms, 999);
}

#[test]
fn one_line_and_a_constant_link() {
    let s = stats("7\n", StatsOptions::default());
    assert_eq!((s.duration_ms, s.opportunities), (7, 1));
    assert!((s.mean_rate_kbps - 12_000.0 / 7.0).abs() < 1e-9);
    assert_eq!(s.interarrival.intervals, 0);
    assert!(s.interarrival.histogram.is_empty());
    assert_eq!(s.outages.count, 0);
    assert_eq!(s.per_second_counts, vec![1]);

    // 12 Mbit/s for 10 s: an opportunity every ms, 1 to 10,000.
    let c = constant_rate_trace("c", 12.0, 10.0).unwrap();
    let s = trace_stats(&c, &StatsOptions::default()).unwrap();
    assert!((s.mean_rate_kbps - 12_000.0).abs() < 1e-9);
    // Second 0 holds 1..=999, seconds 1-9 a thousand each, second 10 the last line.
    let mut want = vec![999];
    want.extend([1000; 9]);
    want.push(1);
    assert_eq!(s.per_second_counts, want);
    assert!((s.peak_rate_kbps - 12_000.0).abs() < 1e-9);
    assert_eq!(
        s.interarrival.histogram,
        vec![bin(0, 1, 0, 1), bin(1, 2, 9999, 9999)]
    );
    assert_eq!(s.interarrival.p99_99_ms, 1);
}

#[test]
fn text_shows_the_figures() {
    let s = stats(SMALL, StatsOptions::default());
    let table = summary_table(std::slice::from_ref(&s));
    let mut lines = table.lines();
    let head = lines.next().unwrap();
    for h in [
        "trace",
        "duration",
        "opportunities",
        "mean kbit/s",
        "peak kbit/s (1 s)",
    ] {
        assert!(head.contains(h), "{head}");
    }
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        row,
        vec!["t", "3.0", "s", "8", "32.0", "60.0", "2", "1.5", "s", "99.6%"]
    );
    let details = details_text(&s);
    assert!(details.contains("7 intervals"), "{details}");
    assert!(details.contains("1024-2047 ms"), "{details}");
    assert!(details.contains("per-second counts (4 seconds): min 0, median 2, max 5"));
    assert!(details.contains("outages: 2 of 1.0 s or more"), "{details}");
    // The bars: 1/7 = 14.3% is 5.16 decades above 1e-6, so 21 characters; 2/7 is 22.
    let bar = |label: &str| {
        details
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap()
            .matches('█')
            .count()
    };
    assert_eq!(bar("0 ms"), 21);
    assert_eq!(bar("1 ms"), 22);
    assert_eq!(bar("8-15 ms"), 0);
}

#[test]
fn errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.up");
    let e = load_stats(&missing, &StatsOptions::default()).unwrap_err();
    assert!(
        e.to_string().starts_with(&missing.display().to_string()),
        "{e}"
    );

    let bad = dir.path().join("bad.down");
    std::fs::write(&bad, "1\n2\nthree\n4\n").unwrap();
    let e = load_stats(&bad, &StatsOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}:3: not a non-negative integer: `three`", bad.display())
    );
    std::fs::write(&bad, "1\n5\n4\n").unwrap();
    let e = load_stats(&bad, &StatsOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .ends_with(":3: timestamp 4 goes backwards (previous 5)"),
        "{e}"
    );
    std::fs::write(&bad, "\n\n").unwrap();
    let e = load_stats(&bad, &StatsOptions::default()).unwrap_err();
    assert!(e.to_string().contains("empty trace"), "{e}");

    let t = Trace::parse("t", SMALL).unwrap();
    for options in [
        StatsOptions {
            bin_ms: 0,
            ..StatsOptions::default()
        },
        StatsOptions {
            outage_threshold_ms: 0,
            ..StatsOptions::default()
        },
    ] {
        assert!(matches!(
            trace_stats(&t, &options),
            Err(StatsError::Option(_))
        ));
    }
    // 2e10 ms in 1 s bins is 20 million bins: refused, not allocated.
    let long = Trace::parse("long", "0\n20000000000\n").unwrap();
    let e = trace_stats(&long, &StatsOptions::default()).unwrap_err();
    assert!(matches!(e, StatsError::TooLong { .. }), "{e}");
}

fn convert(csv: &str, options: &CsvOptions) -> (Trace, sprout_link::convert::ConvertSummary) {
    let mut out = Vec::new();
    let summary = throughput_csv_to_trace(csv.as_bytes(), "in.csv", options, &mut out).unwrap();
    let trace = Trace::parse("out", std::str::from_utf8(&out).unwrap()).unwrap();
    (trace, summary)
}

#[test]
fn csv_intervals_become_evenly_spaced_opportunities() {
    // 12 Mbit/s for 3 s = 1000 packets a second, one per ms.
    let (t, sum) = convert("time,mbps\n0,12\n1,12\n2,12\n", &CsvOptions::default());
    assert_eq!(t.opportunities_ms(), (1..=3000).collect::<Vec<u64>>());
    assert_eq!(sum.rows, 3);
    assert_eq!(sum.header, Some(vec!["time".into(), "mbps".into()]));
    assert_eq!(sum.duration_ms, 3000);
    assert!(!sum.added_final_opportunity);

    // 0.018 Mbit/s = 1.5 packets a second: 1, then 2 with the carried half, then 1, then 2,
    // each interval's last at its end; then the end (5 s) is given its opportunity.
    let (t, sum) = convert(
        "0 0.018\n1 0.018\n2 0.018\n3 0.018\n4 0\n",
        &CsvOptions::default(),
    );
    let s = trace_stats(&t, &StatsOptions::default()).unwrap();
    assert_eq!(s.per_second_counts, vec![0, 2, 1, 2, 1, 1]);
    assert_eq!(
        t.opportunities_ms(),
        &[1000, 1500, 2000, 3000, 3500, 4000, 5000]
    );
    assert!(sum.added_final_opportunity);
    assert_eq!(sum.leftover_bits, 0.0);

    // Columns by name, semicolons, milliseconds and kbit/s, an uneven last interval.
    let options = CsvOptions {
        time_column: Some(Column::Name("t_ms".into())),
        rate_column: Column::Name("Throughput".into()),
        time_unit_s: 0.001,
        rate_unit_bps: 1e3,
        interval_s: Some(0.5),
        ..CsvOptions::default()
    };
    let (t, sum) = convert(
        "# a comment\nx;t_ms;throughput\n1;1000;1200\n2;1100;0\n3;1200;1200\n",
        &options,
    );
    // 1.2 Mbit/s = 100 packets/s: 10 in [0,100) ms, 0, then 50 in [200,700) ms.
    assert_eq!(t.len(), 60);
    assert_eq!(t.opportunities_ms()[..3], [10, 20, 30]);
    assert_eq!(t.opportunities_ms()[9..12], [100, 210, 220]);
    assert_eq!(t.period_ms(), 700);
    assert!((sum.csv_mean_mbit - 1.2 * 600.0 / 700.0).abs() < 1e-9);

    // No time column: rows of --interval.
    let options = CsvOptions {
        time_column: None,
        rate_column: Column::Number(1),
        interval_s: Some(0.25),
        ..CsvOptions::default()
    };
    let (t, _) = convert("24\n48\n", &options);
    // 24 Mbit/s over 250 ms = 500 packets; 48 Mbit/s = 1000.
    assert_eq!(t.len(), 1500);
    assert_eq!(t.period_ms(), 500);
}

#[test]
fn csv_errors_name_the_line() {
    let err = |csv: &str, options: &CsvOptions| {
        throughput_csv_to_trace(csv.as_bytes(), "in.csv", options, std::io::sink())
            .unwrap_err()
            .to_string()
    };
    let d = CsvOptions::default();
    assert_eq!(
        err("t,r\n0,1\n1,x\n", &d),
        "in.csv:3: the throughput (column 2) is not a number: `x`"
    );
    assert_eq!(
        err("0,1\n1\n", &d),
        "in.csv:2: has 1 field; the throughput is column 2"
    );
    assert!(err("0,1\n2,1\n1,1\n", &d).starts_with("in.csv:3: the time does not increase"));
    assert_eq!(
        err("0,1\n1,-3\n", &d),
        "in.csv:2: the throughput is negative: -3"
    );
    assert_eq!(err("t,r\n", &d), "in.csv: no data rows");
    assert!(err("0,5\n", &d).contains("only one row"));
    let named = CsvOptions {
        rate_column: Column::Name("down".into()),
        ..CsvOptions::default()
    };
    assert_eq!(
        err("time,up\n0,1\n", &named),
        "in.csv:1: no column named \"down\" in the header (time, up)"
    );
    assert!(err("0,1\n", &named).contains("not a header"));
    let few = CsvOptions {
        max_opportunities: 100,
        ..CsvOptions::default()
    };
    assert!(err("0,1\n1,1\n2,1\n", &few).starts_with("in.csv:2: more than 100 opportunities"));
    assert_eq!(
        "0".parse::<Column>().unwrap_err().to_string(),
        "column 0: columns are counted from 1 (or named by their header)"
    );
}

#[test]
fn outage_overlay_removes_what_stats_then_finds() {
    let c = constant_rate_trace("c", 12.0, 120.0).unwrap();
    let overlay = OutageOverlay {
        seed: 4,
        probability_per_s: 0.05,
        mean_length_s: 2.0,
    };
    let (t, outages) = overlay.apply(&c);
    assert_eq!(t.period_ms(), 120_000, "the loop period is kept");
    assert!(!outages.is_empty());
    // Each outage [s, e) removes the lines s..e-1 (the trace's lines are 1, 2, ... 120,000,
    // the last always kept): the stats see a gap from s-1 (or the start) to e, of at least
    // 2 ms whenever a line was removed.
    let s = trace_stats(
        &t,
        &StatsOptions {
            outage_threshold_ms: 2,
            ..StatsOptions::default()
        },
    )
    .unwrap();
    let seen: Vec<(u64, u64)> = s
        .outages
        .list
        .iter()
        .map(|o| (o.start_ms, o.start_ms + o.length_ms))
        .collect();
    let want: Vec<(u64, u64)> = outages
        .iter()
        .filter(|(a, b)| *b > (*a).max(1))
        .map(|(a, b)| (a.saturating_sub(1), *b))
        .collect();
    assert_eq!(seen, want);
    let removed: u64 = outages
        .iter()
        .map(|(a, b)| b.saturating_sub((*a).max(1)) - u64::from(*b == 120_000))
        .sum();
    assert_eq!(t.len() as u64 + removed, 120_000);
    // Seeded: the same outages again, other ones for another seed, none at probability 0.
    assert_eq!(overlay.apply(&c).0, t);
    let other = OutageOverlay {
        seed: 5,
        ..overlay.clone()
    };
    assert_ne!(other.outages(120_000), outages);
    let none = OutageOverlay {
        probability_per_s: 0.0,
        ..overlay
    };
    assert_eq!(none.apply(&c).0, c);
}

#[test]
fn written_traces_read_back() {
    let c = constant_rate_trace("c", 1.2, 2.0).unwrap();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    sprout_link::convert::write_trace(&c, &mut f).unwrap();
    f.flush().unwrap();
    let back = Trace::load(f.path()).unwrap();
    assert_eq!(back.opportunities_ms(), c.opportunities_ms());
}
