//! Known answers from the Sprout authors' own model code: `../shared/fixtures/` holds 326
//! sequences of per-tick packet counts (63,277 ticks) with the 8-tick forecast their code
//! computes after the last tick and after every tick (see that folder's README). With the
//! default parameters our model must give every one of them exactly: a mismatch is a modelling
//! difference, not rounding noise (the closest decision in the fixtures is 1.5e-8 from
//! flipping).

use std::collections::HashMap;
use std::path::PathBuf;

use sprout_core::{estimator, Config};

fn fixtures_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures"));
    dir.join("authors-forecasts.csv").is_file().then_some(dir)
}

fn parse_counts(field: &str) -> Vec<u32> {
    field
        .split_whitespace()
        .map(|t| t.parse().unwrap_or_else(|_| panic!("bad count {t:?}")))
        .collect()
}

/// (case, ticks, last forecast) rows of `authors-forecasts.csv`.
fn cases(dir: &std::path::Path) -> Vec<(String, Vec<u32>, Vec<u32>)> {
    let text = std::fs::read_to_string(dir.join("authors-forecasts.csv")).expect("read fixture");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 3, "malformed fixture row {l:?}");
            (f[0].to_string(), parse_counts(f[1]), parse_counts(f[2]))
        })
        .collect()
}

/// The forecast after every tick of `counts`, from a fresh estimator with `config`.
fn run(config: &Config, counts: &[u32]) -> Vec<[u32; 8]> {
    let mut e = estimator::build(config);
    counts
        .iter()
        .map(|&k| {
            e.evolve();
            e.observe(k as f64);
            let mut out = [0u32; 8];
            e.forecast(&mut out);
            out
        })
        .collect()
}

fn skip_notice() {
    eprintln!(
        "SKIPPED: authors_fixtures needs ../shared/fixtures (the Sprout authors' forecasts); \
         it is not there, so the exact-arithmetic check did not run"
    );
}

#[test]
fn every_final_and_per_tick_forecast_equals_the_authors() {
    let Some(dir) = fixtures_dir() else {
        skip_notice();
        return;
    };
    let config = Config::default();
    let cases = cases(&dir);
    assert_eq!(cases.len(), 326, "the fixture holds 326 cases");

    let per_tick_text =
        std::fs::read_to_string(dir.join("authors-forecasts-per-tick.csv")).expect("read");
    let mut expected: HashMap<(&str, usize), Vec<u32>> = HashMap::new();
    for l in per_tick_text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 3, "malformed per-tick row {l:?}");
        let tick: usize = f[1].parse().expect("tick number");
        expected.insert((f[0], tick), parse_counts(f[2]));
    }
    assert_eq!(expected.len(), 63_277, "the per-tick file holds 63,277 rows");

    let (mut last_ok, mut tick_ok, mut ticks) = (0usize, 0usize, 0usize);
    let mut wrong = Vec::new();
    for (name, counts, last) in &cases {
        let got = run(&config, counts);
        if got.last().map(|f| f.as_slice()) == Some(last.as_slice()) {
            last_ok += 1;
        } else if wrong.len() < 5 {
            wrong.push(format!(
                "{name}: last {:?}, authors {last:?}",
                got.last().unwrap_or(&[0; 8])
            ));
        }
        for (t, f) in got.iter().enumerate() {
            let want = expected
                .get(&(name.as_str(), t + 1))
                .unwrap_or_else(|| panic!("{name} tick {} missing from the per-tick file", t + 1));
            ticks += 1;
            if f.as_slice() == want.as_slice() {
                tick_ok += 1;
            } else if wrong.len() < 10 {
                wrong.push(format!("{name} tick {}: {f:?}, authors {want:?}", t + 1));
            }
        }
    }
    println!(
        "authors' fixtures: {last_ok} of {} final forecasts and {tick_ok} of {ticks} per-tick \
         forecasts equal",
        cases.len()
    );
    assert_eq!(ticks, 63_277);
    assert!(
        last_ok == cases.len() && tick_ok == ticks,
        "{last_ok} of {} final and {tick_ok} of {ticks} per-tick forecasts equal; first \
         differences:\n{}",
        cases.len(),
        wrong.join("\n")
    );
}
