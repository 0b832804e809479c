//! Trace parsing, errors, capacity and the opportunity cursor.

use sprout_core::time::Instant;
use std::sync::Arc;

use sprout_link::{OpportunityCursor, Trace, TraceError};

fn err(text: &str) -> TraceError {
    Trace::parse("Verizon.down", text).expect_err("should fail")
}

#[test]
fn backwards_error_names_file_line_and_both_values() {
    let mut text = String::new();
    for _ in 0..15 {
        text.push_str("1\n");
    }
    text.push_str("9\n5\n");
    let e = err(&text);
    assert!(matches!(
        e,
        TraceError::Backwards {
            line: 17,
            value: 5,
            previous: 9,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "Verizon.down:17: timestamp 5 goes backwards (previous 9)"
    );
}

#[test]
fn not_a_number_shows_the_text() {
    let e = err("0\n1\n  12abc \n");
    assert!(matches!(e, TraceError::NotANumber { line: 3, .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "Verizon.down:3: not a non-negative integer: `12abc`"
    );
    let e = err("0\n-4\n");
    assert_eq!(
        e.to_string(),
        "Verizon.down:2: not a non-negative integer: `-4`"
    );
    let e = err("1.5\n");
    assert!(e.to_string().starts_with("Verizon.down:1: "), "{e}");
}

#[test]
fn too_large_is_reported() {
    let e = err("1\n99999999999999999999999\n");
    assert!(matches!(e, TraceError::TooLarge { line: 2, .. }), "{e:?}");
    assert!(e
        .to_string()
        .starts_with("Verizon.down:2: timestamp 99999999999999999999999"));
    let e = err("18446744073709551\n");
    assert!(matches!(e, TraceError::TooLarge { line: 1, .. }), "{e:?}");
}

#[test]
fn empty_traces_are_errors() {
    for text in ["", "\n", "  \n\n \t\n"] {
        let e = err(text);
        assert!(matches!(e, TraceError::Empty { .. }), "{text:?}: {e:?}");
        assert!(e.to_string().starts_with("Verizon.down: empty"), "{e}");
    }
    let e = Trace::from_opportunities_ms("x", vec![]).unwrap_err();
    assert!(matches!(e, TraceError::Empty { .. }));
    let e = Trace::from_opportunities_ms("x", vec![3, 2]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x:2: timestamp 2 goes backwards (previous 3)"
    );
}

#[test]
fn load_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.up");
    std::fs::write(&path, "0\n1\n\n7\n3\n").unwrap();
    let e = Trace::load(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:5: timestamp 3 goes backwards (previous 7)",
            path.display()
        )
    );
    let missing = dir.path().join("missing.down");
    let e = Trace::load(&missing).unwrap_err();
    assert!(matches!(e, TraceError::Io { .. }));
    assert!(
        e.to_string().starts_with(&missing.display().to_string()),
        "{e}"
    );
}

#[test]
fn load_tolerates_whitespace_and_names_by_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Link-A.down");
    std::fs::write(&path, "\n 0 \r\n0\n\n3\t\n10").unwrap();
    let t = Trace::load(&path).unwrap();
    assert_eq!(t.name(), "Link-A.down");
    assert_eq!(t.opportunities_ms(), &[0, 0, 3, 10]);
    assert_eq!(t.len(), 4);
    assert_eq!(t.period_ms(), 10);
    assert_eq!(t.duration().as_micros(), 10_000);
    // 4 * 12000 bits / 10 ms = 4800 kbit/s
    assert!((t.mean_capacity_kbps() - 4800.0).abs() < 1e-9);
}

#[test]
fn zero_length_trace_has_one_ms_period() {
    let t = Trace::parse("z", "0\n0\n").unwrap();
    assert_eq!(t.period_ms(), 1);
    let t = Arc::new(t);
    let times: Vec<u64> = t.cursor(true).take(6).map(Instant::as_micros).collect();
    assert_eq!(times, vec![0, 0, 1000, 1000, 2000, 2000]);
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(3000), true),
        6 * 1500
    );
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(3000), false),
        2 * 1500
    );
}

fn sample() -> Arc<Trace> {
    // Looping: 0,5,5,10 | 10,15,15,20 | 20,25,25,30 ...
    Arc::new(Trace::parse("s", "0\n5\n5\n10\n").unwrap())
}

#[test]
fn capacity_known_answers_without_looping() {
    let t = sample();
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(10_000), false),
        3 * 1500
    );
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(10_001), false),
        4 * 1500
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(5_000),
            Instant::from_micros(5_001),
            false
        ),
        2 * 1500
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(5_001),
            Instant::from_micros(9_999),
            false
        ),
        0
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(10_001),
            Instant::from_micros(1_000_000_000),
            false
        ),
        0
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(0),
            Instant::from_micros(u64::MAX),
            false
        ),
        4 * 1500
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(6_000),
            Instant::from_micros(5_000),
            false
        ),
        0
    );
}

#[test]
fn capacity_known_answers_with_looping() {
    let t = sample();
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(10_000), true),
        3 * 1500
    );
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(10_001), true),
        5 * 1500
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(10_000),
            Instant::from_micros(10_001),
            true
        ),
        2 * 1500
    );
    assert_eq!(
        t.capacity_bytes(Instant::from_micros(0), Instant::from_micros(20_000), true),
        7 * 1500
    );
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(12_000),
            Instant::from_micros(32_000),
            true
        ),
        8 * 1500
    );
    // 1000 whole periods from 0: 4 per period except the final boundary's two.
    assert_eq!(
        t.capacity_bytes(
            Instant::from_micros(0),
            Instant::from_micros(10_000_000),
            true
        ),
        (4 * 1000 - 1) * 1500
    );
    // Saturates instead of overflowing.
    assert!(
        t.capacity_bytes(
            Instant::from_micros(0),
            Instant::from_micros(u64::MAX),
            true
        ) > 0
    );
}

#[test]
fn capacity_agrees_with_cursor_enumeration() {
    let t = Arc::new(Trace::parse("c", "0\n0\n3\n3\n3\n4\n9\n9\n").unwrap());
    for looping in [false, true] {
        let times: Vec<u64> = t
            .cursor(looping)
            .map(Instant::as_micros)
            .take_while(|&x| x < 100_000)
            .collect();
        for from in (0..50_000).step_by(700) {
            for len in [0, 1, 999, 1000, 1001, 4_500, 9_000, 9_001, 27_000] {
                let to = from + len;
                let brute = times.iter().filter(|&&x| x >= from && x < to).count() as u64;
                assert_eq!(
                    t.capacity_bytes(
                        Instant::from_micros(from),
                        Instant::from_micros(to),
                        looping
                    ),
                    brute * 1500,
                    "[{from}, {to}) looping={looping}"
                );
            }
        }
    }
}

#[test]
fn cursor_loops_or_stops() {
    let t = sample();
    let looping: Vec<u64> = t.cursor(true).take(9).map(Instant::as_micros).collect();
    assert_eq!(
        looping,
        vec![0, 5_000, 5_000, 10_000, 10_000, 15_000, 15_000, 20_000, 20_000]
    );
    let mut once = t.cursor(false);
    assert_eq!(once.peek().map(Instant::as_micros), Some(0));
    let all: Vec<u64> = once.by_ref().map(Instant::as_micros).collect();
    assert_eq!(all, vec![0, 5_000, 5_000, 10_000]);
    assert_eq!(once.peek().map(Instant::as_micros), None);
    assert_eq!(once.next(), None);
}

#[test]
fn cursor_seek() {
    let t = sample();
    let mut c = OpportunityCursor::starting_at(Arc::clone(&t), true, Instant::from_micros(12_000));
    assert_eq!(c.peek().map(Instant::as_micros), Some(15_000));
    c.seek(Instant::from_micros(1_000)); // never backwards
    assert_eq!(c.peek().map(Instant::as_micros), Some(15_000));
    c.seek(Instant::from_micros(20_000));
    let v: Vec<u64> = c.take(3).map(Instant::as_micros).collect();
    assert_eq!(v, vec![20_000, 20_000, 25_000]);
    let c = OpportunityCursor::starting_at(Arc::clone(&t), false, Instant::from_micros(10_001));
    assert_eq!(c.peek().map(Instant::as_micros), None);
    let c = OpportunityCursor::starting_at(Arc::clone(&t), false, Instant::from_micros(10_000));
    assert_eq!(c.peek().map(Instant::as_micros), Some(10_000));
    // Seeking anywhere agrees with walking the cursor.
    let z = Arc::new(Trace::parse("z", "0\n0\n").unwrap());
    for trace in [t, z] {
        for from in (0..40_000).step_by(250) {
            let walked = trace
                .cursor(true)
                .map(Instant::as_micros)
                .find(|&x| x >= from);
            let c = OpportunityCursor::starting_at(
                Arc::clone(&trace),
                true,
                Instant::from_micros(from),
            );
            assert_eq!(c.peek().map(Instant::as_micros), walked, "from {from}");
            let walked: Vec<u64> = trace
                .cursor(true)
                .map(Instant::as_micros)
                .skip_while(|&x| x < from)
                .take(5)
                .collect();
            let sought: Vec<u64> = c.take(5).map(Instant::as_micros).collect();
            assert_eq!(sought, walked, "from {from}");
        }
    }
}

#[test]
fn find_pairs_in_directory() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "b.up",
        "b.down",
        "a.up",
        "a.down",
        "lonely.up",
        "only.down",
        "notes.txt",
    ] {
        std::fs::write(dir.path().join(f), "1\n").unwrap();
    }
    let pairs = Trace::find_pairs(dir.path()).unwrap();
    let names: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(pairs[0].1, dir.path().join("a.up"));
    assert_eq!(pairs[0].2, dir.path().join("a.down"));
    let e = Trace::find_pairs(dir.path().join("nope")).unwrap_err();
    assert!(matches!(e, TraceError::Io { .. }));
}
