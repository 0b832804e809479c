//! The wide forecast's quantile for a belief spread over rates far apart, at a bounded cost.
//!
//! Where two moments describe the mixture badly ([`crate::wide_forecast`]), the forecast for
//! horizon `h` is the smallest count `c` with `F_h(c) >= q`, where
//! `F_h(c) = sum_b p_b F_hb(c)` is the value-by-value CDF of the packets delivered by the end
//! of tick `h`: the outage delivers none, value `b`'s count is negative binomial of its own
//! mean and variance below [`SMALL_MEAN`] packets, Normal (continuity-corrected) above.
//! Summed value by value inside a bisection over counts ([`WideForecast::exact_mixture_quantile`],
//! kept as the reference), that is some twenty passes over ~250 values per horizon, each
//! negative binomial summed term by term: milliseconds a tick, every tick, for the receiver
//! of a direction that carries only feedback.
//!
//! Here each horizon has a grid of counts `0 = c_0 < c_1 < ... < c_J = top` and a table of
//! every value's CDF at every grid count (f32). A forecast bisects the grid, one dot product of
//! the belief with a table row per step, and takes the answer inside the last cell from the
//! chord between the cell's two ends. The grid is built so that, in every cell and for every
//! value, the chord is within [`TOLERANCE`] of the value's CDF at every count of the cell: the
//! Normal's curvature bounds it by `w^2 max|z phi(z)| / (8 sd^2)` for a cell `w` counts wide,
//! and the CDF's rise over the cell bounds it for any value; the grid takes the smaller. The
//! mixture is a convex combination of the values, so its chord is within the same of `F_h`,
//! and the answer `c` (from the table, whose f32 entries are within 6e-8 of the CDFs) has
//! `F_h(c) >= q - ERROR_BOUND` and `F_h(c - 1) < q + ERROR_BOUND`: it is the exact quantile
//! of a level within [`ERROR_BOUND`] of `q`.
//!
//! Cost: about ten dot products over the belief's support per horizon, whatever the belief;
//! memory: one f32 per value and grid count (a few MB at the defaults, shared by every
//! estimator of the same parameters).
//!
//! [`WideForecast::exact_mixture_quantile`]: crate::wide_forecast::WideForecast::exact_mixture_quantile

use crate::model::normal_cdf;
use crate::wide_counts::{negative_binomial_cdfs, terms_bound, SMALL_MEAN};

/// Largest distance, in probability, between a cell's chord and any value's CDF inside it.
pub const TOLERANCE: f64 = 1e-4;

/// The bound on the level of the quantile the table gives: [`TOLERANCE`], the table's f32
/// rounding (6e-8) and the chord's own rounding.
pub const ERROR_BOUND: f64 = TOLERANCE + 1e-6;

/// A Normal value's CDF is taken as 1 this many standard deviations below the count (1 to
/// within 1e-19, beneath f32's resolution).
const SATURATED_Z: f64 = 9.0;

/// The largest of `|z| phi(z)` (at `|z| = 1`), phi the standard Normal density.
const MAX_Z_PHI: f64 = 0.241_970_724_519_143_37;

/// One value's count distribution at one horizon.
#[derive(Clone, Debug, PartialEq)]
enum ValueCdf {
    /// The outage: no packet.
    Outage,
    /// Negative binomial (or Poisson): `P(N <= k)` for `k = 0, 1, ...`, up to where it adds
    /// nothing more (the mean plus 40 sd); beyond, the last entry.
    Counted(Vec<f64>),
    /// Normal of this mean and sd (packets), continuity-corrected.
    Normal { mean: f64, sd: f64 },
}

impl ValueCdf {
    /// The distribution of value `b` at a horizon, from its mean and its variance beyond the
    /// Poisson's (`spread`), as [`crate::wide_forecast::WideForecast`] defines them.
    fn new(b: usize, mean: f64, spread: f64) -> Self {
        if b == 0 {
            return ValueCdf::Outage;
        }
        let var = mean + spread;
        if mean < SMALL_MEAN {
            let bound = terms_bound(mean, spread);
            let mut cdf: Vec<f64> = Vec::new();
            for acc in negative_binomial_cdfs(mean, spread.max(0.0)).take(bound.max(1)) {
                cdf.push(acc.min(1.0));
                if acc >= 1.0 {
                    break;
                }
            }
            return ValueCdf::Counted(cdf);
        }
        ValueCdf::Normal {
            mean,
            sd: var.sqrt(),
        }
    }

    /// P(N <= c), `c` a whole count.
    fn at(&self, c: u32) -> f64 {
        match self {
            ValueCdf::Outage => 1.0,
            ValueCdf::Counted(cdf) => cdf[(c as usize).min(cdf.len() - 1)],
            ValueCdf::Normal { mean, sd } => {
                let z = (c as f64 + 0.5 - mean) / sd;
                if z > SATURATED_Z {
                    1.0
                } else {
                    normal_cdf(z)
                }
            }
        }
    }

    /// A bound on how far the chord from `(a, F(a))` to `(b, F(b))` strays from the CDF at
    /// any whole count between `a < b`.
    fn chord_error(&self, a: u32, b: u32) -> f64 {
        match self {
            ValueCdf::Outage => 0.0,
            ValueCdf::Counted(cdf) => {
                if a as usize >= cdf.len() - 1 {
                    0.0
                } else {
                    self.at(b) - self.at(a)
                }
            }
            ValueCdf::Normal { mean, sd } => {
                let za = (a as f64 + 0.5 - mean) / sd;
                if za > SATURATED_Z {
                    return 0.0;
                }
                let zb = (b as f64 + 0.5 - mean) / sd;
                let w = (b - a) as f64 / sd;
                let curvature = w * w * max_z_phi(za, zb) / 8.0;
                if curvature <= TOLERANCE {
                    curvature
                } else {
                    curvature.min(normal_cdf(zb) - normal_cdf(za))
                }
            }
        }
    }
}

/// The largest of `|z| phi(z)` over `[za, zb]`: it rises from 0 at 0 to its top at `|z| = 1`
/// and falls beyond, on either side.
fn max_z_phi(za: f64, zb: f64) -> f64 {
    if (za <= 1.0 && zb >= 1.0) || (za <= -1.0 && zb >= -1.0) {
        return MAX_Z_PHI;
    }
    let g = |z: f64| z.abs() * (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    g(za).max(g(zb))
}

/// One horizon's grid of counts and the values' CDFs at them, row by row, each row holding
/// only the values between those it takes as 1 (a prefix) and those it takes as 0 (a suffix).
#[derive(Clone, Debug, PartialEq)]
struct HorizonTable {
    /// The grid: 0 first, the horizon's largest count last, increasing.
    counts: Vec<u32>,
    /// Per grid count, where its row lies in `cdf`.
    rows: Vec<Band>,
    /// The stored CDFs, row after row.
    cdf: Vec<f32>,
}

/// One row of a [`HorizonTable`]: the CDFs of values `start..end` from `cdf[offset]`; the
/// values below `start` are 1 (to f32's resolution), those from `end` below [`NEGLIGIBLE`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct Band {
    offset: u32,
    start: u32,
    end: u32,
}

/// A value's CDF below this is taken as 0 (which moves the mixture's by at most this).
const NEGLIGIBLE: f64 = 1e-9;

/// A value's CDF at or above this is taken as 1 (it rounds to 1 in f32).
const SATURATED: f64 = 1.0 - 1.0 / (1u64 << 25) as f64;

impl HorizonTable {
    /// P(N <= counts[j]) under a prepared belief.
    fn cdf_at(&self, j: usize, prob: &[f64], belief: &Prepared) -> f64 {
        let band = self.rows[j];
        let (start, end) = (band.start as usize, band.end as usize);
        let (lo, hi) = belief.support;
        // The values below the row's start deliver at most the count: all their mass. Of the
        // stored ones, those outside the support hold a negligible mass.
        let (from, to) = (start.max(lo), end.min(hi));
        let stored = if from < to {
            let row = &self.cdf[band.offset as usize + (from - start)..];
            dot(&prob[from..to], &row[..to - from])
        } else {
            0.0
        };
        belief.below[start] + stored
    }
}

/// A belief made ready for [`MixtureTables::quantile`]: its running sums and support.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    /// `below[b]`: the mass of the values under `b`.
    below: Vec<f64>,
    /// The values `lo..hi` that hold the belief (those outside hold a negligible mass).
    support: (usize, usize),
}

impl Prepared {
    /// The belief `prob`, held by the values `support.0..support.1`.
    pub fn new(prob: &[f64], support: (usize, usize)) -> Self {
        let mut p = Prepared::default();
        p.prepare(prob, support);
        p
    }

    /// [`Prepared::new`] in place, reusing the allocation.
    pub fn prepare(&mut self, prob: &[f64], support: (usize, usize)) {
        self.below.clear();
        self.below.reserve(prob.len() + 1);
        let mut acc = 0.0;
        self.below.push(0.0);
        for &p in prob {
            acc += p;
            self.below.push(acc);
        }
        let hi = support.1.min(prob.len());
        self.support = (support.0.min(hi), hi);
    }
}

/// The tables of every horizon.
#[derive(Clone, Debug, PartialEq)]
pub struct MixtureTables {
    horizons: Vec<HorizonTable>,
}

impl MixtureTables {
    /// The tables for per-value means and spreads laid out as in
    /// [`crate::wide_forecast::WideForecast`] (`[(h - 1) n + b]`), with `top[h - 1]` the
    /// largest count at horizon `h`.
    pub fn new(n: usize, mean: &[f64], spread: &[f64], top: &[u32]) -> Self {
        let horizons = top
            .iter()
            .enumerate()
            .map(|(h, &top)| {
                let values: Vec<ValueCdf> = (0..n)
                    .map(|b| ValueCdf::new(b, mean[h * n + b], spread[h * n + b]))
                    .collect();
                horizon_table(&values, top)
            })
            .collect();
        MixtureTables { horizons }
    }

    /// Grid counts at each horizon.
    pub fn grid_sizes(&self) -> Vec<usize> {
        self.horizons.iter().map(|t| t.counts.len()).collect()
    }

    /// Bytes the tables hold.
    pub fn bytes(&self) -> usize {
        self.horizons
            .iter()
            .map(|t| t.cdf.len() * 4 + t.counts.len() * 4 + t.rows.len() * 12)
            .sum()
    }

    /// The smallest count `c` with P(N_h <= c) >= `q` under `belief` (`h` 0-based), to
    /// within [`ERROR_BOUND`] in `q` (see the module's comment); the horizon's largest count
    /// when even that falls short. The search starts at the grid's cell of `hint` (the last
    /// tick's answer, say: the answer does not depend on it, its cost does), gallops out to
    /// a bracket, and narrows it by interpolation between the bracket's ends (in grid steps,
    /// nearly log-count), with a bisection after any step that did not halve it.
    /// `belief` is `prob` prepared ([`Prepared::new`]).
    pub fn quantile(&self, prob: &[f64], belief: &Prepared, h: usize, q: f64, hint: u32) -> u32 {
        let t = &self.horizons[h];
        let last = t.counts.len() - 1;
        let f = |j: usize| t.cdf_at(j, prob, belief);
        let start = t.counts.partition_point(|&c| c < hint).min(last);
        let Some((mut a, mut fa, mut b, mut fb)) = bracket(start, last, q, f) else {
            return if f(0) >= q { 0 } else { t.counts[last] };
        };
        let mut bisect = false;
        while b - a > 1 {
            let mid = if bisect {
                a + (b - a) / 2
            } else {
                let x = a as f64 + (q - fa) / (fb - fa) * (b - a) as f64;
                (x.round() as usize).clamp(a + 1, b - 1)
            };
            let width = b - a;
            let fm = f(mid);
            if fm >= q {
                (b, fb) = (mid, fm);
            } else {
                (a, fa) = (mid, fm);
            }
            bisect = !bisect && 2 * (b - a) > width;
        }
        let (ca, cb) = (t.counts[a], t.counts[b]);
        if cb - ca == 1 {
            return cb;
        }
        // The smallest whole count on the chord at or above q.
        let w = (cb - ca) as f64;
        let x = ((q - fa) / (fb - fa) * w).ceil();
        ca + (x.clamp(1.0, w) as u32)
    }
}

/// Rows `(a, F(a), b, F(b))` with `a < b`, `F(a) < q <= F(b)`, found by galloping from row
/// `start` (steps 1, 2, 4, ...) over rows `0..=last` of the non-decreasing `f`; `None` when
/// `q` is reached at row 0 already or not even at `last`.
fn bracket(
    start: usize,
    last: usize,
    q: f64,
    f: impl Fn(usize) -> f64,
) -> Option<(usize, f64, usize, f64)> {
    let fs = f(start);
    let mut step = 1;
    if fs >= q {
        let (mut b, mut fb) = (start, fs);
        loop {
            if b == 0 {
                return None;
            }
            let a = b.saturating_sub(step);
            let fa = f(a);
            if fa < q {
                return Some((a, fa, b, fb));
            }
            (b, fb) = (a, fa);
            step *= 2;
        }
    }
    let (mut a, mut fa) = (start, fs);
    loop {
        if a == last {
            return None;
        }
        let b = (a + step).min(last);
        let fb = f(b);
        if fb >= q {
            return Some((a, fa, b, fb));
        }
        (a, fa) = (b, fb);
        step *= 2;
    }
}

/// The grid and table of one horizon: from 0, each cell as wide as the chord allows.
fn horizon_table(values: &[ValueCdf], top: u32) -> HorizonTable {
    let mut counts = vec![0u32];
    let mut c = 0u32;
    let mut width = 1u32;
    // Values below `first` are flat from `c` on (their chords exact), as they stay.
    let mut first = 0;
    while c < top {
        while first < values.len() && values[first].chord_error(c, top) == 0.0 {
            first += 1;
        }
        width = widest_cell(&values[first..], c, width, top - c);
        c += width;
        counts.push(c);
    }
    let mut rows = Vec::with_capacity(counts.len());
    let mut cdf = Vec::new();
    let mut row = Vec::with_capacity(values.len());
    for &c in &counts {
        row.clear();
        row.extend(values.iter().map(|v| v.at(c)));
        let start = row.iter().position(|&f| f < SATURATED).unwrap_or(row.len());
        let end = row
            .iter()
            .rposition(|&f| f >= NEGLIGIBLE)
            .map_or(start, |i| (i + 1).max(start));
        rows.push(Band {
            offset: cdf.len() as u32,
            start: start as u32,
            end: end as u32,
        });
        cdf.extend(row[start..end].iter().map(|&f| f as f32));
    }
    HorizonTable { counts, rows, cdf }
}

fn widest_cell(values: &[ValueCdf], a: u32, guess: u32, room: u32) -> u32 {
    let fits = |w: u32| w <= 1 || cell_error(values, a, a + w) <= TOLERANCE;
    let guess = guess.clamp(1, room);
    let (mut ok, mut bad) = if fits(guess) {
        let mut ok = guess;
        loop {
            if ok == room {
                return room;
            }
            let next = ok.saturating_mul(2).min(room);
            if !fits(next) {
                break (ok, next);
            }
            ok = next;
        }
    } else {
        (1, guess)
    };
    // Invariant: a cell `ok` wide fits, one `bad` wide does not.
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if fits(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    ok
}

/// The largest chord error of any value over the cell `[a, b]`. Normal values' sds rise with
/// their means, so once a value above the cell is too spread to matter, so are the rest.
fn cell_error(values: &[ValueCdf], a: u32, b: u32) -> f64 {
    let w = (b - a) as f64;
    let mut worst = 0.0f64;
    for v in values {
        let e = v.chord_error(a, b);
        worst = worst.max(e);
        if worst > TOLERANCE {
            return worst;
        }
        if let ValueCdf::Normal { mean, sd } = v {
            let flat = (w / sd).powi(2) * MAX_Z_PHI / 8.0;
            if *mean > b as f64 && flat <= TOLERANCE / 4.0 {
                break;
            }
        }
    }
    worst
}

/// `sum p_i t_i`, in four running sums that the compiler keeps in vector registers.
fn dot(p: &[f64], t: &[f32]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut pc = p.chunks_exact(8);
    let mut tc = t.chunks_exact(8);
    for (pp, tt) in (&mut pc).zip(&mut tc) {
        for k in 0..8 {
            acc[k] += pp[k] * tt[k] as f64;
        }
    }
    let mut sum: f64 = acc.iter().sum();
    for (&x, &y) in pc.remainder().iter().zip(tc.remainder()) {
        sum += x * y as f64;
    }
    sum
}
