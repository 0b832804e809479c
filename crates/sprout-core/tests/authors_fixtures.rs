//! Known answers from the Sprout authors' own model code: `../shared/fixtures/` holds 326
//! sequences of per-tick packet counts (63,277 ticks) with the 8-tick forecast their code
//! computes after the last tick and after every tick (see that folder's README). With the
//! default parameters our model must give every one of them exactly: a mismatch is a modelling
//! difference, not rounding noise (the closest decision in the fixtures is 1.5e-8 from
//! flipping).

use std::collections::HashMap;
use std::path::PathBuf;

use sprout_core::{estimator, Config};

/// `../shared/fixtures`, or `None` with the skip recorded where a person sees it.
fn fixtures_dir() -> Option<PathBuf> {
    sprout_link::testdata::require("fixtures/authors-forecasts.csv")
        .and_then(|f| f.parent().map(|d| d.to_path_buf()))
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

/// The rows of `authors-forecasts-per-tick.csv`: (case, tick from 1) to forecast.
fn per_tick(dir: &std::path::Path) -> HashMap<(String, usize), Vec<u32>> {
    let text = std::fs::read_to_string(dir.join("authors-forecasts-per-tick.csv")).expect("read");
    let mut expected = HashMap::new();
    for l in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 3, "malformed per-tick row {l:?}");
        let tick: usize = f[1].parse().expect("tick number");
        expected.insert((f[0].to_string(), tick), parse_counts(f[2]));
    }
    assert_eq!(
        expected.len(),
        63_277,
        "the per-tick file holds 63,277 rows"
    );
    expected
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

#[test]
fn every_final_and_per_tick_forecast_equals_the_authors() {
    let Some(dir) = fixtures_dir() else { return };
    let config = Config::default();
    let cases = cases(&dir);
    assert_eq!(cases.len(), 326, "the fixture holds 326 cases");

    let expected = per_tick(&dir);

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
                .get(&(name.clone(), t + 1))
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

/// Final forecasts (of the 326) and per-tick forecasts that differ from the authors' when one
/// detail of their arithmetic is switched to its named alternative.
#[test]
fn each_detail_of_the_authors_arithmetic_matters_as_the_fixture_readme_measured() {
    use sprout_core::params::{CountTail, GaussianCdf, KernelSpan, RateGrid};
    let Some(dir) = fixtures_dir() else { return };
    let cases = cases(&dir);
    let expected = per_tick(&dir);
    // (detail, the change, final and per-tick forecasts the README says it changes)
    type Change = fn(&mut Config);
    let variants: [(&str, Change, usize, usize); 4] = [
        (
            "exact Gaussian CDF",
            |c| c.model.gaussian_cdf = GaussianCdf::Exact,
            31,
            5_686,
        ),
        (
            "lowest value 1.95 packets/s",
            |c| {
                c.model.grid = RateGrid::Midpoint;
                c.model.bins = 257;
            },
            14,
            2_005,
        ),
        (
            "tick counts >= 30 lumped at 30",
            |c| c.model.count_tail = CountTail::Lump,
            8,
            1_517,
        ),
        (
            "symmetric kernel",
            |c| c.model.kernel_span = KernelSpan::Symmetric,
            1,
            82,
        ),
    ];
    for (name, change, readme_last, readme_ticks) in variants {
        let mut config = Config::default();
        change(&mut config);
        let (mut last_changed, mut ticks_changed) = (0, 0);
        for (case, counts, last) in &cases {
            let got = run(&config, counts);
            if got.last().map(|f| f.as_slice()) != Some(last.as_slice()) {
                last_changed += 1;
            }
            ticks_changed += got
                .iter()
                .enumerate()
                .filter(|(t, f)| expected[&(case.clone(), t + 1)] != f.as_slice())
                .count();
        }
        println!(
            "{name}: {last_changed} of {} final and {ticks_changed} of 63277 per-tick forecasts \
             change",
            cases.len()
        );
        assert_eq!(
            (last_changed, ticks_changed),
            (readme_last, readme_ticks),
            "{name}: the fixture's README measured {readme_last} ({readme_ticks})"
        );
    }
}
