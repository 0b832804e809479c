//! The receiver's model of the link rate (paper §3.1–3.2): a probability distribution over
//! discrete values of lambda, evolved by Brownian motion and updated by Bayes' rule from the
//! packets that arrive in each tick. By default it is the authors' arithmetic, detail for
//! detail (see [`crate::params::ModelParams`]); the lowest value is an outage at exactly 0
//! packets/s, weighted by the escape rate but not sticky, or on the paper-literal grid a sticky
//! outage (see [`RateGrid`]).

use crate::params::{GaussianCdf, KernelSpan, ModelParams, RateGrid};

/// Standard normal cumulative distribution function.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// The CDF of the rate's change over one tick (a Gaussian of mean 0), exact or as the authors
/// tabulate it.
enum ChangeCdf {
    Exact {
        sd: f64,
    },
    /// The authors' `GaussianCache`: `cells + 1` entries over `[-range, range]` (128 cells per
    /// spacing of the rate grid, 32,768 on the authors' grid), entry `k`
    /// holding the CDF at `-range` (k = 0) or at `(k + 0.5) width - range`.
    Table {
        range: f64,
        width: f64,
        cdf: Vec<f64>,
    },
}

impl ChangeCdf {
    fn new(p: &ModelParams, sd: f64) -> Self {
        match p.gaussian_cdf {
            GaussianCdf::Exact => ChangeCdf::Exact { sd },
            GaussianCdf::Table => {
                let range = p.max_rate_pps;
                // 128 cells per spacing of the rate grid, as the authors' `bins * 128`.
                let cells = 128 * (p.values() - 1);
                let width = (range - -range) / cells as f64;
                let cdf = (0..=cells)
                    .map(|k| {
                        let x = if k == 0 {
                            -range
                        } else {
                            (k as f64 + 0.5) * width + -range
                        };
                        normal_cdf(x / sd)
                    })
                    .collect();
                ChangeCdf::Table { range, width, cdf }
            }
        }
    }

    /// P(change < d), `d` in packets/s (may be infinite).
    fn at(&self, d: f64) -> f64 {
        match self {
            ChangeCdf::Exact { sd } => normal_cdf(d / sd),
            ChangeCdf::Table { range, width, cdf } => {
                // The authors' `to_bin`: truncation toward zero, clamped to the table.
                let x = ((d - -range) / width).trunc();
                let k = if x.is_nan() || x < 0.0 {
                    0
                } else {
                    (x as usize).min(cdf.len() - 1)
                };
                cdf[k]
            }
        }
    }
}

/// P(N >= k) for N Poisson with mean `m` (k >= 1), accurate to a few ulps relative in both
/// tails: below the mean by the series of the upper tail from the term at k (each next term
/// smaller by m / (k + j)), above it as 1 minus the lower tail summed down from k - 1 (each
/// term smaller by j / m), so that neither sum subtracts nearly equal numbers. Written here
/// rather than taken from a statistics crate because a tick needs it for every value of the
/// grid with one integer k, where this is a short loop without allocation or a general
/// incomplete gamma function; `tests::poisson_tail_matches_direct_summation` checks it.
pub(crate) fn poisson_tail(k: u32, m: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if m.is_nan() || m <= 0.0 {
        return 0.0;
    }
    let kf = k as f64;
    let ln_pmf = |j: f64| j * m.ln() - m - libm::lgamma(j + 1.0);
    if m < kf {
        let first = ln_pmf(kf).exp();
        let (mut term, mut sum, mut j) = (1.0, 1.0, kf);
        while term > 1e-17 * sum {
            j += 1.0;
            term *= m / j;
            sum += term;
        }
        (first * sum).min(1.0)
    } else {
        let mut term = ln_pmf(kf - 1.0).exp();
        let mut below = 0.0;
        let mut j = kf - 1.0;
        loop {
            below += term;
            if j < 1.0 || term < 1e-17 * below {
                break;
            }
            term *= j / m;
            j -= 1.0;
        }
        (1.0 - below).max(0.0)
    }
}

/// One row of the banded evolution matrix: where the mass of one source bin goes in one tick.
#[derive(Clone, Debug)]
pub(crate) struct KernelRow {
    /// First destination bin.
    pub start: usize,
    /// Probabilities for destination bins `start..start + weights.len()`; they sum to at most
    /// 1 (the truncated Gaussian and the outage's escape weighting lose a little mass, which
    /// normalisation removes).
    pub weights: Vec<f64>,
}

/// The per-tick evolution of the rate (Brownian motion with an outage value), as a banded
/// matrix.
///
/// From each value the rate moves by a Gaussian of standard deviation `sigma * sqrt(tau)`,
/// integrated over each destination value's interval ([`ModelParams::lower_edge`] to
/// [`ModelParams::upper_edge`]) and truncated at `kernel_sigmas`; the Gaussian is not reflected
/// at 0: what falls below the grid goes to its lowest value's interval, which reaches down to
/// minus infinity (or, on the paper-literal grid, is lost and normalised away). From the lowest
/// value, on the authors' and the midpoint grid the Gaussian's share that stays is weighed by
/// `exp(-lambda_z tau)` and the share that leaves by the rest (the lost mass is normalised
/// away, so the value is not sticky); on the paper-literal grid it is the outage, left with
/// probability `1 - exp(-lambda_z tau)` by the Gaussian restricted to positive rates, so
/// outages last `1 / lambda_z` seconds on average.
#[derive(Clone, Debug)]
pub struct Evolution {
    rows: Vec<KernelRow>,
    /// The same matrix as a shared band, for [`Evolution::apply`].
    band: Band,
}

/// Destinations computed together by [`Evolution::apply`]: their sums stay in registers (eight
/// of four) while the band streams past, enough independent sums to hide the latency of an
/// addition.
const LANES: usize = 32;

/// The kernel as one band shared by every destination: away from the grid's ends, the weight
/// from row `r` to destination `j` depends on `j - r` alone (the edges and centres are
/// multiples of the spacing, exact in binary, so every CDF is read at the same point), so that
/// destination `j`'s sum is `sum over s of p[j - up + s] * weights[s]`, `s` ascending, which
/// is row order. A pass of [`LANES`] destinations then reads the band once and the belief as
/// consecutive windows, with no matrix to stream from memory.
///
/// Row 0 (the outage's escape weighting) is each sum's first term, added to `0.0` before the
/// band; destinations any of whose weights from rows `1..` differ from the band by a bit (the
/// lowest and highest, whose intervals reach to infinity) are summed from their own column.
/// Terms outside the grid read exact zeros. As zeros add `+0.0`, which changes no sum of
/// non-negative terms (it is only not the identity on `-0.0`, which such a sum never is), every
/// destination's sum is bit for bit that of adding the rows one after another.
#[derive(Clone, Debug)]
struct Band {
    /// How far above itself a row >= 1 reaches, in bins.
    up: usize,
    /// `weights[s]`: the weight from row `j - up + s` to destination `j`.
    weights: Vec<f64>,
    /// Row 0's weight to each destination (0 where it does not reach), padded with zeros to a
    /// whole number of passes.
    first_row: Vec<f64>,
    /// Destinations whose weights differ from the band, in ascending order, each summed from
    /// its own column where a pass holds a few of them.
    odd: Vec<OddColumn>,
    /// Passes most of whose destinations differ from the band (on a grid whose spacing is not
    /// exact in binary, every destination may), in ascending order: their own weights, read
    /// as the band's are.
    blocks: Vec<Block>,
}

/// One destination's weights from the rows that reach it.
#[derive(Clone, Debug)]
struct OddColumn {
    /// The destination bin.
    dest: usize,
    /// First source row that reaches it.
    first: usize,
    /// Rows `first..`'s weights to it (0 for a row in between that does not reach it).
    weights: Vec<f64>,
}

/// A pass of destinations with weights of their own: `weights[s * lanes + l]` is the weight
/// from row `start + l - up + s` (>= 1) to destination `start + l`, 0 where that row does not
/// reach it or lies outside the grid, so that each destination's sum runs over the rows in
/// the same order as the band's.
#[derive(Clone, Debug)]
struct Block {
    /// First destination of the pass.
    start: usize,
    /// Destinations in the pass ([`LANES`], or 4 for the grid's last few).
    lanes: usize,
    weights: Vec<f64>,
}

/// The weight from row `r` to destination `j` (0 where the row does not reach).
fn weight(rows: &[KernelRow], r: usize, j: usize) -> f64 {
    let row = &rows[r];
    match j.checked_sub(row.start) {
        Some(k) => row.weights.get(k).copied().unwrap_or(0.0),
        None => 0.0,
    }
}

impl Band {
    /// The band of `rows` (a square kernel of `n` bins), taken from the middle row, and the
    /// destinations that do not fit it.
    fn of(rows: &[KernelRow], n: usize) -> Self {
        let last = |r: &KernelRow| r.start + r.weights.len().max(1) - 1;
        let up = (1..n).map(|r| last(&rows[r]).saturating_sub(r)).max();
        let down = (1..n).map(|r| r.saturating_sub(rows[r].start)).max();
        let (up, down) = (up.unwrap_or(0), down.unwrap_or(0));
        let mid = n / 2;
        let weights: Vec<f64> = (0..=up + down)
            .map(|s| match (mid + up).checked_sub(s) {
                Some(j) if j < n => weight(rows, mid, j),
                _ => 0.0,
            })
            .collect();
        let passes = n.div_ceil(LANES) * LANES;
        let first_row = (0..passes)
            .map(|j| if j < n { weight(rows, 0, j) } else { 0.0 })
            .collect();
        let fits = |j: usize| {
            weights
                .iter()
                .enumerate()
                .all(|(s, &w)| match (j + s).checked_sub(up) {
                    Some(r) if (1..n).contains(&r) => weight(rows, r, j).to_bits() == w.to_bits(),
                    _ => true,
                })
        };
        let odd_dests: Vec<usize> = (0..n).filter(|&j| !fits(j)).collect();
        let mut blocks = Vec::new();
        for (start, lanes) in passes_of(n) {
            let odd_here = odd_dests
                .iter()
                .filter(|&&j| (start..start + lanes).contains(&j))
                .count();
            if odd_here > ODD_COLUMNS_PER_PASS {
                blocks.push(Block::of(rows, n, up, weights.len(), start, lanes));
            }
        }
        let in_block = |j: usize| {
            blocks
                .iter()
                .any(|b| (b.start..b.start + b.lanes).contains(&j))
        };
        let odd = odd_dests
            .into_iter()
            .filter(|&j| !in_block(j))
            .map(|dest| {
                let reaches = |r: &usize| weight(rows, *r, dest) != 0.0;
                let first = (0..n).find(reaches).unwrap_or(0);
                let end = (0..n).rfind(reaches).map_or(first, |r| r + 1);
                let weights = (first..end).map(|r| weight(rows, r, dest)).collect();
                OddColumn {
                    dest,
                    first,
                    weights,
                }
            })
            .collect();
        Band {
            up,
            weights,
            first_row,
            odd,
            blocks,
        }
    }

    /// The sums of destinations `start..start + L`: row 0's term `p0 * first_row[j]`, then
    /// the band over `pad`, which holds row `r >= 1` of the belief at `r + up` and zeros
    /// around it (row 0 included).
    #[inline(always)]
    fn sums<const L: usize>(&self, p0: f64, pad: &[f64], start: usize) -> [f64; L] {
        let mut acc = self.first_terms::<L>(p0, start);
        for (s, &w) in self.weights.iter().enumerate() {
            if let Some(window) = pad[start + s..].first_chunk::<L>() {
                for (a, &x) in acc.iter_mut().zip(window) {
                    *a += x * w;
                }
            }
        }
        acc
    }

    /// [`Band::sums`] with a block's own weights in place of the band's.
    #[inline(always)]
    fn block_sums<const L: usize>(&self, p0: f64, pad: &[f64], block: &Block) -> [f64; L] {
        let start = block.start;
        let mut acc = self.first_terms::<L>(p0, start);
        for (s, ws) in block.weights.chunks_exact(L).enumerate() {
            if let (Some(window), Some(ws)) =
                (pad[start + s..].first_chunk::<L>(), ws.first_chunk::<L>())
            {
                for ((a, &x), &w) in acc.iter_mut().zip(window).zip(ws) {
                    *a += x * w;
                }
            }
        }
        acc
    }

    /// Each sum's first term, row 0's: `0.0 + p0 * first_row[j]` (the sum starts at zero, as
    /// row-by-row accumulation's does).
    #[inline(always)]
    fn first_terms<const L: usize>(&self, p0: f64, start: usize) -> [f64; L] {
        let mut acc = [0.0; L];
        if let Some(first) = self.first_row[start..].first_chunk::<L>() {
            for (a, &w) in acc.iter_mut().zip(first) {
                *a = 0.0 + p0 * w;
            }
        }
        acc
    }
}

/// Where a pass of [`Band`] destinations has this many or fewer that differ from the band,
/// they are summed from their own columns; more, and the pass is a [`Block`].
const ODD_COLUMNS_PER_PASS: usize = 2;

/// The passes of [`Evolution::apply`] over `n` destinations: `(start, lanes)`, whole passes of
/// [`LANES`], then the rest four at a time (the last may hold fewer destinations).
fn passes_of(n: usize) -> impl Iterator<Item = (usize, usize)> {
    let whole = n / LANES * LANES;
    (0..whole)
        .step_by(LANES)
        .map(|s| (s, LANES))
        .chain((whole..n).step_by(4).map(|s| (s, 4)))
}

impl Block {
    /// The block of destinations `start..start + lanes` of the kernel `rows` (`n` bins, rows
    /// >= 1 reaching `up` above themselves, `len` band weights).
    fn of(
        rows: &[KernelRow],
        n: usize,
        up: usize,
        len: usize,
        start: usize,
        lanes: usize,
    ) -> Block {
        let mut weights = vec![0.0; len * lanes];
        for s in 0..len {
            for l in 0..lanes {
                let j = start + l;
                if let Some(r) = (j + s).checked_sub(up) {
                    if j < n && (1..n).contains(&r) {
                        weights[s * lanes + l] = weight(rows, r, j);
                    }
                }
            }
        }
        Block {
            start,
            lanes,
            weights,
        }
    }
}

impl OddColumn {
    /// The destination's sum of `p`, in row order.
    fn sum(&self, p: &[f64]) -> f64 {
        let mut acc = 0.0;
        for (&m, &w) in p[self.first..].iter().zip(&self.weights) {
            acc += m * w;
        }
        acc
    }
}

impl Evolution {
    /// Builds the kernel for the given parameters (over one tick).
    pub fn new(p: &ModelParams) -> Self {
        let n = p.values();
        let w = p.bin_width();
        let s = p.sigma * p.tau().sqrt();
        let cdf = ChangeCdf::new(p, s);
        let reach = p.kernel_sigmas * s;
        let symmetric = ((p.kernel_sigmas * s) / w).ceil() as usize;
        let sticky = p.grid == RateGrid::ZeroOutage;
        let leave = 1.0 - (-p.outage_escape_rate * p.tau()).exp();
        let mut rows = Vec::with_capacity(n);
        for i in 0..n {
            let centre = p.rate(i);
            let (start, end) = match p.kernel_span {
                KernelSpan::Authors => (
                    p.value_of(centre - reach),
                    (p.value_of(centre + reach) + 1).min(n - 1),
                ),
                KernelSpan::Symmetric => (i.saturating_sub(symmetric), (i + symmetric).min(n - 1)),
            };
            let mut weights: Vec<f64> = (start..=end)
                .map(|j| {
                    let hi = cdf.at(p.upper_edge(j) - centre);
                    let lo = cdf.at(p.lower_edge(j) - centre);
                    (hi - lo).max(0.0)
                })
                .collect();
            if i == 0 && !sticky {
                for (k, x) in weights.iter_mut().enumerate() {
                    *x *= if start + k == 0 { 1.0 - leave } else { leave };
                }
            } else if i == 0 {
                // The outage is sticky: it lasts an exponential time with rate lambda_z.
                weights[0] = 0.0;
                let escape_mass: f64 = weights.iter().sum();
                for x in weights.iter_mut() {
                    *x *= leave / escape_mass;
                }
                weights[0] = 1.0 - leave;
            }
            rows.push(KernelRow { start, weights });
        }
        let band = Band::of(&rows, n);
        Evolution { rows, band }
    }

    /// The kernel's rows, one per source bin.
    pub(crate) fn rows(&self) -> &[KernelRow] {
        &self.rows
    }

    /// Applies one tick of evolution: `out = p * T`. `out` must have the same length as `p`,
    /// and `p` must hold finite non-negative probabilities. Each destination receives the
    /// source rows' products in row order, as row-by-row accumulation would (see `Band`).
    pub fn apply(&self, p: &[f64], out: &mut [f64]) {
        self.apply_and_sum(p, out, &mut Vec::new());
    }

    /// [`Evolution::apply`], returning the sum of `out` added in index order (as
    /// `out.iter().sum()` would), computed while the destinations are made. `pad` is scratch
    /// space (its contents on entry do not matter; kept between calls, it is not reallocated).
    pub(crate) fn apply_and_sum(&self, p: &[f64], out: &mut [f64], pad: &mut Vec<f64>) -> f64 {
        let n = p.len();
        let band = &self.band;
        let passes = band.first_row.len();
        debug_assert!(n <= passes && out.len() == n);
        pad.clear();
        pad.resize(passes + band.weights.len(), 0.0);
        if n > 1 {
            pad[band.up + 1..band.up + n].copy_from_slice(&p[1..]);
        }
        let p0 = p.first().copied().unwrap_or(0.0);
        let mut odd = band.odd.iter().peekable();
        let mut blocks = band.blocks.iter().peekable();
        let mut total = 0.0;
        for (start, lanes) in passes_of(n) {
            let len = lanes.min(n - start);
            let mut acc = [0.0; LANES];
            if let Some(block) = blocks.next_if(|b| b.start == start) {
                if lanes == LANES {
                    acc = band.block_sums::<LANES>(p0, pad, block);
                } else {
                    acc[..4].copy_from_slice(&band.block_sums::<4>(p0, pad, block));
                }
            } else if lanes == LANES {
                acc = band.sums::<LANES>(p0, pad, start);
            } else {
                acc[..4].copy_from_slice(&band.sums::<4>(p0, pad, start));
            }
            while let Some(c) = odd.next_if(|c| c.dest < start + len) {
                acc[c.dest - start] = c.sum(p);
            }
            // Element by element: a copy of a run-time length would call memcpy.
            for (d, &x) in out[start..start + len].iter_mut().zip(&acc) {
                *d = x;
                total += x;
            }
        }
        total
    }
}

/// Probabilities below this are set to zero after each normalisation, which keeps the arithmetic
/// away from subnormal numbers (slow). It must be this small: a mass of 1e-30 far from the
/// belief can be brought back by a burst of packets, and flushing at 1e-30 changed 10 of the
/// authors' 63,277 per-tick forecasts (`tests/authors_fixtures.rs`).
const FLUSH_BELOW: f64 = 1e-300;

/// The receiver's belief about the current link rate: a probability for each bin of the grid.
#[derive(Clone, Debug)]
pub struct RateModel {
    params: ModelParams,
    evolution: Evolution,
    /// ln(rate * tau) for each bin (bin 0: unused).
    ln_mean: Vec<f64>,
    /// rate * tau for each bin: the expected packets per tick.
    mean: Vec<f64>,
    /// exp(-rate * tau) for each bin: the likelihood of an empty tick.
    empty: Vec<f64>,
    prob: Vec<f64>,
    scratch: Vec<f64>,
    /// Scratch space of [`Evolution::apply_and_sum`].
    pad: Vec<f64>,
    likelihoods: LikelihoodCache,
}

/// Slots of the [`LikelihoodCache`].
const LIKELIHOOD_SLOTS: usize = 32;

/// The factors `exp(ll - best)` of [`RateModel::observe`] for the packet counts and largest
/// log-likelihoods seen lately: a steady link brings the same few counts, with the same
/// largest term, tick after tick. The log-likelihoods are a function of the count alone, so a
/// factor found here is bit for bit the one computed afresh.
#[derive(Clone, Debug, Default)]
struct LikelihoodCache {
    /// (count's bits, best's bits, factor per bin), placed by a hash of the two keys.
    slots: Vec<Option<(u64, u64, Vec<f64>)>>,
}

impl LikelihoodCache {
    /// `exp(ll[i] - best)` for every bin, where `ll[i] = k ln_mean[i] - mean[i]` is the
    /// log-likelihood of `k` packets (worked out only when the factors are not here).
    fn factors(&mut self, k: f64, best: f64, ln_mean: &[f64], mean: &[f64]) -> &[f64] {
        let (kb, bb) = (k.to_bits(), best.to_bits());
        if self.slots.len() < LIKELIHOOD_SLOTS {
            self.slots.resize(LIKELIHOOD_SLOTS, None);
        }
        let h = kb ^ (kb >> 29) ^ bb ^ (bb >> 31);
        let slot = &mut self.slots[(h % LIKELIHOOD_SLOTS as u64) as usize];
        let fresh =
            matches!(slot, Some((a, b, v)) if *a == kb && *b == bb && v.len() == mean.len());
        if !fresh {
            let mut v = slot.take().map(|(_, _, v)| v).unwrap_or_default();
            v.clear();
            v.extend(
                ln_mean
                    .iter()
                    .zip(mean)
                    .map(|(&lm, &m)| (log_likelihood(k, lm, m) - best).exp()),
            );
            *slot = Some((kb, bb, v));
        }
        match slot {
            Some((_, _, v)) => v,
            None => &[],
        }
    }
}

impl RateModel {
    /// A model with the uniform prior of the paper (all rates equally probable).
    pub fn new(params: &ModelParams) -> Self {
        Self::with_evolution(params, Evolution::new(params))
    }

    /// A model reusing an already-built evolution kernel.
    pub fn with_evolution(params: &ModelParams, evolution: Evolution) -> Self {
        let n = params.values();
        let tau = params.tau();
        let mean: Vec<f64> = (0..n).map(|i| params.rate(i) * tau).collect();
        let ln_mean = mean
            .iter()
            .map(|&m| if m > 0.0 { m.ln() } else { f64::NEG_INFINITY })
            .collect();
        let empty = mean.iter().map(|&m| (-m).exp()).collect();
        RateModel {
            params: params.clone(),
            evolution,
            ln_mean,
            mean,
            empty,
            prob: vec![1.0 / n as f64; n],
            scratch: vec![0.0; n],
            pad: Vec::new(),
            likelihoods: LikelihoodCache::default(),
        }
    }

    /// The model's parameters.
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// Current probability of each rate bin (sums to 1).
    pub fn probabilities(&self) -> &[f64] {
        &self.prob
    }

    /// Replaces the distribution (it is normalised; an all-zero or invalid input gives the
    /// uniform prior).
    pub fn set_probabilities(&mut self, p: &[f64]) {
        assert_eq!(
            p.len(),
            self.prob.len(),
            "distribution has the wrong number of bins"
        );
        self.prob.copy_from_slice(p);
        self.normalise_or_reset();
    }

    /// Expected rate, in packets/s.
    pub fn mean_rate(&self) -> f64 {
        self.prob
            .iter()
            .enumerate()
            .map(|(i, &p)| p * self.params.rate(i))
            .sum()
    }

    /// Standard deviation of the rate, in packets/s.
    pub fn rate_std(&self) -> f64 {
        let m = self.mean_rate();
        self.prob
            .iter()
            .enumerate()
            .map(|(i, &p)| p * (self.params.rate(i) - m).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// Step 1 of a tick: Brownian motion of the rate over one tick.
    pub fn evolve(&mut self) {
        let total = self
            .evolution
            .apply_and_sum(&self.prob, &mut self.scratch, &mut self.pad);
        std::mem::swap(&mut self.prob, &mut self.scratch);
        normalise_by(&mut self.prob, total, FLUSH_BELOW);
    }

    /// Step 2 and 3 of a tick: Bayes' rule with the Poisson likelihood of seeing `packets`
    /// (MTU-sized units, may be fractional) in one tick, then normalisation.
    pub fn observe(&mut self, packets: f64) {
        let k = if packets.is_finite() && packets > 0.0 {
            packets
        } else {
            0.0
        };
        // The sum of the updated belief is added up in index order as each value is made
        // (as `normalise_or_reset` would add it afterwards).
        let mut total = 0.0;
        if k == 0.0 {
            for (p, &e) in self.prob.iter_mut().zip(&self.empty) {
                *p *= e;
                total += *p;
            }
        } else {
            // Likelihood up to a constant: (lambda tau)^k exp(-lambda tau); the outage bin can
            // not produce packets. Work in logs and subtract the largest term.
            let mut best = largest_log_likelihood(k, &self.prob, &self.ln_mean, &self.mean);
            if best == f64::NEG_INFINITY {
                // The belief was all on the outage but packets came: start again from the
                // prior, which the likelihood then updates.
                self.prob.iter_mut().for_each(|p| *p = 1.0);
                best = self.ln_mean[1..]
                    .iter()
                    .zip(&self.mean[1..])
                    .map(|(&lm, &m)| log_likelihood(k, lm, m))
                    .fold(f64::NEG_INFINITY, f64::max);
            }
            let first = if self.mean[0] > 0.0 {
                0
            } else {
                self.prob[0] = 0.0;
                1
            };
            let factors = self.likelihoods.factors(k, best, &self.ln_mean, &self.mean);
            for (i, (p, &x)) in self.prob.iter_mut().zip(factors).enumerate() {
                if i >= first {
                    *p *= x;
                }
                total += *p;
            }
        }
        normalise_by(&mut self.prob, total, FLUSH_BELOW);
    }

    /// Steps 2 and 3 of a tick whose arrivals are only a lower bound on what the link could
    /// have carried (the sender was application-limited: it sent everything it had): Bayes'
    /// rule with the censored likelihood P(N >= k | lambda), N Poisson with mean lambda tau,
    /// then normalisation. `k` is the whole number of MTU-sized packets in `packets` (the
    /// weaker integer bound; at least 1). Rates that could carry k or more are barely told
    /// apart, so a quiet sender lowers no belief; rates that could not are ruled out as by
    /// [`RateModel::observe`].
    pub fn observe_at_least(&mut self, packets: f64) {
        if !(packets.is_finite() && packets >= 1.0) {
            return;
        }
        let k = packets.floor().min(u32::MAX as f64) as u32;
        for (s, &m) in self.scratch.iter_mut().zip(&self.mean) {
            *s = poisson_tail(k, m);
        }
        apply_likelihood(&mut self.prob, &self.scratch, FLUSH_BELOW);
    }

    fn normalise_or_reset(&mut self) {
        normalise_or_reset(&mut self.prob, FLUSH_BELOW);
    }
}

/// The log-likelihood of `k` packets in a tick, up to a constant: `k ln(mean) - mean`.
#[inline(always)]
fn log_likelihood(k: f64, ln_mean: f64, mean: f64) -> f64 {
    k * ln_mean - mean
}

/// The largest log-likelihood `k ln(mean) - mean` over the values `prob` holds (NEG_INFINITY
/// when it holds none), found four values at a time: a largest value is the same in any
/// order.
fn largest_log_likelihood(k: f64, prob: &[f64], ln_mean: &[f64], mean: &[f64]) -> f64 {
    let n = prob.len() / 4 * 4;
    let mut best = [f64::NEG_INFINITY; 4];
    for ((p, lm), m) in prob[..n]
        .chunks_exact(4)
        .zip(ln_mean[..n].chunks_exact(4))
        .zip(mean[..n].chunks_exact(4))
    {
        for j in 0..4 {
            let ll = if p[j] > 0.0 {
                log_likelihood(k, lm[j], m[j])
            } else {
                f64::NEG_INFINITY
            };
            best[j] = if ll > best[j] { ll } else { best[j] };
        }
    }
    let mut b = best
        .into_iter()
        .fold(f64::NEG_INFINITY, |a, x| if x > a { x } else { a });
    for ((&p, &lm), &m) in prob.iter().zip(ln_mean).zip(mean).skip(n) {
        let ll = log_likelihood(k, lm, m);
        if p > 0.0 && ll > b {
            b = ll;
        }
    }
    b
}

/// Bayes' rule on a belief `prob` with per-value `likelihood`s, then normalisation (see
/// [`normalise_or_reset`]). When no value the belief holds could explain the observation, the
/// belief starts again from the flat prior, which the likelihood then updates. Shared by the
/// paper's model and the wide one.
pub(crate) fn apply_likelihood(prob: &mut [f64], likelihood: &[f64], flush_below: f64) {
    if prob.iter().zip(likelihood).all(|(&p, &l)| p * l == 0.0) {
        prob.iter_mut().for_each(|p| *p = 1.0);
    }
    for (p, &l) in prob.iter_mut().zip(likelihood) {
        *p *= l;
    }
    normalise_or_reset(prob, flush_below);
}

/// Normalises `prob` to sum to 1, setting values under `flush_below` to 0 (and normalising
/// again if that changed the sum); a belief that sums to 0 or is not finite becomes uniform.
pub(crate) fn normalise_or_reset(prob: &mut [f64], flush_below: f64) {
    normalise_by(prob, prob.iter().sum(), flush_below);
}

/// [`normalise_or_reset`] given `total`, the sum of `prob` added in index order.
fn normalise_by(prob: &mut [f64], total: f64, flush_below: f64) {
    if !(total > 0.0 && total.is_finite()) {
        let u = 1.0 / prob.len() as f64;
        prob.iter_mut().for_each(|p| *p = u);
        return;
    }
    // Four values divided at a time (the divisions overlap), their sum still added one
    // value after another.
    let mut kept = 0.0;
    let mut chunks = prob.chunks_exact_mut(4);
    for c in &mut chunks {
        let mut q = [c[0] / total, c[1] / total, c[2] / total, c[3] / total];
        for x in q.iter_mut() {
            if *x < flush_below {
                *x = 0.0;
            }
        }
        c.copy_from_slice(&q);
        kept += q[0];
        kept += q[1];
        kept += q[2];
        kept += q[3];
    }
    for p in chunks.into_remainder() {
        *p /= total;
        if *p < flush_below {
            *p = 0.0;
        }
        kept += *p;
    }
    if kept != 1.0 {
        prob.iter_mut().for_each(|p| *p /= kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point_mass(p: &ModelParams, bin: usize) -> Vec<f64> {
        let mut v = vec![0.0; p.values()];
        v[bin] = 1.0;
        v
    }

    #[test]
    fn cached_likelihoods_give_the_same_bits_as_fresh_ones() {
        let p = ModelParams::default();
        let mut cached = RateModel::new(&p);
        let counts = [3.0, 3.0, 4.0, 3.0, 0.0, 3.0, 4.5, 4.5, 3.0, 25.0, 3.0, 3.0];
        for (t, &k) in counts.iter().cycle().take(120).enumerate() {
            cached.evolve();
            let mut fresh = cached.clone();
            fresh.likelihoods = LikelihoodCache::default();
            cached.observe(k);
            fresh.observe(k);
            for (a, b) in cached.probabilities().iter().zip(fresh.probabilities()) {
                assert_eq!(a.to_bits(), b.to_bits(), "tick {t}: {a} vs {b}");
            }
        }
        assert!(cached.likelihoods.slots.iter().flatten().count() >= 3);
    }

    /// `p * T` added row after row, as the matrix reads, skipping rows of zero mass.
    fn row_by_row(ev: &Evolution, p: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; p.len()];
        for (row, &mass) in ev.rows().iter().zip(p) {
            if mass == 0.0 {
                continue;
            }
            for (k, &w) in row.weights.iter().enumerate() {
                out[row.start + k] += mass * w;
            }
        }
        out
    }

    #[test]
    fn the_shared_band_is_bit_identical_to_row_by_row() {
        let mut kernels = Vec::new();
        for grid in [RateGrid::Authors, RateGrid::ZeroOutage, RateGrid::Midpoint] {
            for kernel_span in [KernelSpan::Authors, KernelSpan::Symmetric] {
                for gaussian_cdf in [GaussianCdf::Table, GaussianCdf::Exact] {
                    kernels.push(ModelParams {
                        grid,
                        kernel_span,
                        gaussian_cdf,
                        ..ModelParams::default()
                    });
                }
            }
        }
        // Grids narrower than the band, and one not a multiple of a pass.
        for bins in [1, 3, 20, 100] {
            kernels.push(ModelParams {
                bins,
                ..ModelParams::default()
            });
        }
        for p in &kernels {
            let ev = Evolution::new(p);
            let n = p.values();
            // Uneven masses with runs of exact zeros and tiny values; mass at the outage.
            let uneven: Vec<f64> = (0..n)
                .map(|i| match i % 11 {
                    1 | 2 => 0.0,
                    3 => 1e-290,
                    _ => ((i * 37 % 101) as f64 + 0.5) / 5000.0,
                })
                .collect();
            // A belief on a few values in the middle, and one at both ends.
            let mut narrow = vec![0.0; n];
            narrow[n / 2] = 0.6;
            narrow[(n / 2).saturating_sub(1)] = 0.4;
            let mut ends = vec![0.0; n];
            ends[0] = 0.5;
            ends[n - 1] += 0.5;
            for prob in [uneven, narrow, ends] {
                let reference = row_by_row(&ev, &prob);
                let mut out = vec![1.0; n];
                ev.apply(&prob, &mut out);
                for (j, (a, b)) in out.iter().zip(&reference).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{p:?} dest {j}: {a} vs {b}");
                }
                let mut pad = vec![f64::NAN; 3];
                let total = ev.apply_and_sum(&prob, &mut out, &mut pad);
                assert_eq!(total.to_bits(), reference.iter().sum::<f64>().to_bits());
            }
        }
    }

    #[test]
    fn only_the_grids_two_ends_need_their_own_columns() {
        // Every other destination's weights are the one band's, bit for bit.
        let p = ModelParams::default();
        let ev = Evolution::new(&p);
        let odd: Vec<usize> = ev.band.odd.iter().map(|c| c.dest).collect();
        assert_eq!(odd, [0, 256]);
        assert!(ev.band.blocks.is_empty());
        // 5 sigma (36.2 bins) below, and the authors' one more above: 74 weights.
        assert_eq!((ev.band.up, ev.band.weights.len()), (37, 74));
    }

    #[test]
    fn a_grid_spaced_inexactly_is_summed_in_blocks() {
        // 1000/255 packets/s is not exact in binary: almost no destination fits the band.
        let p = ModelParams {
            grid: RateGrid::ZeroOutage,
            ..ModelParams::default()
        };
        let ev = Evolution::new(&p);
        let covered: usize = ev.band.blocks.iter().map(|b| b.lanes).sum();
        assert!(
            covered >= p.values() / 2,
            "{covered} destinations in blocks"
        );
        assert!(ev.band.odd.len() <= 2 * (p.values() / LANES + 1));
    }

    #[test]
    fn poisson_tail_matches_direct_summation() {
        // Direct summation of the pmf from 0 (fine at these sizes) against the two-sided form.
        for &m in &[1e-3f64, 0.3, 1.0, 2.5, 7.0, 20.0, 60.0, 300.0] {
            for &k in &[1u32, 2, 3, 5, 10, 30, 100] {
                let mut pmf = (-m).exp();
                let mut below = 0.0;
                for j in 0..k {
                    below += pmf;
                    pmf *= m / (j + 1) as f64;
                }
                let direct = 1.0 - below;
                let got = poisson_tail(k, m);
                if direct > 1e-6 {
                    assert!(
                        (got - direct).abs() <= 1e-12 + 1e-9 * direct,
                        "k={k} m={m}: {got} vs {direct}"
                    );
                } else {
                    // Direct summation has lost every digit here; the tail is tiny (below
                    // the smallest double at k = 100, m = 0.001: 1e-458).
                    assert!((0.0..1e-5).contains(&got), "k={k} m={m}: {got}");
                    let first = (k as f64 * m.ln() - m - libm::lgamma(k as f64 + 1.0)).exp();
                    assert!(got >= first && got <= 2.0 * first, "k={k} m={m}: {got}");
                }
            }
        }
        // Known answers: P(N >= 1 | 1) = 1 - 1/e; P(N >= 3 | 2) = 1 - 5/e^2.
        assert!((poisson_tail(1, 1.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-15);
        assert!((poisson_tail(3, 2.0) - (1.0 - 5.0 * (-2.0f64).exp())).abs() < 1e-15);
        // Far below the mean the upper tail is the first term: m^k e^-m / k!.
        let t = poisson_tail(30, 0.02);
        let first = (30.0 * 0.02f64.ln() - 0.02 - libm::lgamma(31.0)).exp();
        assert!((t / first - 1.0).abs() < 1e-3, "{t} vs {first}");
        assert_eq!(poisson_tail(5, 0.0), 0.0);
        assert_eq!(poisson_tail(0, 0.0), 1.0);
    }

    #[test]
    fn a_censored_tick_rules_out_only_rates_too_slow_for_it() {
        let p = ModelParams::default();
        let mut exact = RateModel::new(&p);
        let mut censored = RateModel::new(&p);
        // A sender that sends 2 packets a tick (100 packets/s) and could have sent more.
        for _ in 0..250 {
            exact.evolve();
            exact.observe(2.0);
            censored.evolve();
            censored.observe_at_least(2.0);
        }
        // Scored exactly, the belief settles on the sender's own rate.
        assert!(
            (exact.mean_rate() - 100.0).abs() < 40.0,
            "{}",
            exact.mean_rate()
        );
        // Scored as a lower bound, it keeps rates well above it...
        assert!(censored.mean_rate() > 300.0, "{}", censored.mean_rate());
        // ...and gives no weight to rates that could hardly carry 2 packets a tick.
        let slow: f64 = censored.probabilities()[..p.value_of(25.0)].iter().sum();
        assert!(slow < 0.01, "mass below 25 packets/s: {slow}");
        assert!((censored.probabilities().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_censored_tick_after_a_certain_outage_starts_from_the_prior() {
        let p = ModelParams::default();
        let mut m = RateModel::new(&p);
        m.set_probabilities(&point_mass(&p, 0));
        m.observe_at_least(3.0);
        assert_eq!(m.probabilities()[0], 0.0);
        assert!(m.mean_rate() > 100.0);
        // Nothing, or nonsense, tells nothing.
        let before = m.probabilities().to_vec();
        m.observe_at_least(0.0);
        m.observe_at_least(f64::NAN);
        assert_eq!(m.probabilities(), &before[..]);
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-15);
        assert!((normal_cdf(1.0) - 0.841_344_746_068_543).abs() < 1e-12);
        assert!((normal_cdf(-1.959_963_984_540_054) - 0.025).abs() < 1e-12);
    }

    #[test]
    fn evolution_conserves_probability() {
        let p = ModelParams::default();
        let mut m = RateModel::new(&p);
        for start in [0usize, 1, 5, 128, 250, 255] {
            m.set_probabilities(&point_mass(&p, start));
            for _ in 0..50 {
                m.evolve();
                let total: f64 = m.probabilities().iter().sum();
                assert!((total - 1.0).abs() < 1e-12, "mass {total} from bin {start}");
            }
        }
        // And from the uniform prior.
        let mut m = RateModel::new(&p);
        for _ in 0..100 {
            m.evolve();
        }
        assert!((m.probabilities().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// Mean and spread of the rate after 1 and 4 ticks from a certain 501.95 packets/s.
    fn spread_from_value_128(p: &ModelParams) -> [(f64, f64); 2] {
        let mut m = RateModel::new(p);
        m.set_probabilities(&point_mass(p, 128));
        m.evolve();
        let one = (m.mean_rate() - p.rate(128), m.rate_std());
        for _ in 0..3 {
            m.evolve();
        }
        [one, (m.mean_rate() - p.rate(128), m.rate_std())]
    }

    #[test]
    fn certain_rate_stays_centred_and_spreads_by_28_3_per_tick() {
        // With the exact CDF and a symmetric span: sigma * sqrt(tau) = 200 * sqrt(0.02) =
        // 28.28 packets/s; integrating over values w apart adds w^2/12 of variance
        // (Sheppard): sqrt(800 + 3.91^2/12) = 28.31. After four ticks the spread doubles.
        let exact = ModelParams {
            gaussian_cdf: GaussianCdf::Exact,
            kernel_span: KernelSpan::Symmetric,
            ..ModelParams::default()
        };
        let [(d1, s1), (d4, s4)] = spread_from_value_128(&exact);
        assert!(d1.abs() < 1e-9 && d4.abs() < 1e-9, "drift {d1} {d4}");
        assert!((s1 - 28.3).abs() < 0.05, "std {s1}");
        assert!((s4 - 56.6).abs() < 0.1, "std {s4}");
        // The authors' table reads the CDF at the midpoint of the cell holding each edge, half
        // a cell (0.0305 packets/s) above it on average: the rate drifts down by about that
        // much a tick (1.5 packets/s per second), with the same spread.
        let [(d1, s1), (d4, s4)] = spread_from_value_128(&ModelParams::default());
        assert!((d1 + 0.0305).abs() < 0.005, "drift {d1}");
        assert!((d4 + 4.0 * 0.0305).abs() < 0.02, "drift {d4}");
        assert!((s1 - 28.3).abs() < 0.05, "std {s1}");
        assert!((s4 - 56.6).abs() < 0.1, "std {s4}");
    }

    fn literal() -> ModelParams {
        ModelParams {
            grid: RateGrid::ZeroOutage,
            ..ModelParams::default()
        }
    }

    #[test]
    fn outage_is_sticky_with_escape_rate() {
        let p = literal();
        let mut m = RateModel::new(&p);
        m.set_probabilities(&point_mass(&p, 0));
        m.evolve();
        let stay = (-0.02f64).exp();
        assert!((m.probabilities()[0] - stay).abs() < 1e-12);
        // The escaping mass goes to positive rates only.
        assert!((m.probabilities()[1..].iter().sum::<f64>() - (1.0 - stay)).abs() < 1e-12);
    }

    #[test]
    fn the_authors_lowest_bin_is_not_sticky() {
        // Value 0 (0 packets/s) keeps exp(-0.02) of the Gaussian's share that stays in its
        // interval (everything below 3.91 packets/s: 55%) and sends out only 2% of the rest:
        // once renormalised, it holds about 98% of what is left, but the lost mass makes it
        // lose ground to any neighbour each tick.
        let p = ModelParams::default();
        assert_eq!(p.grid, RateGrid::Authors);
        let mut m = RateModel::new(&p);
        let mut two = vec![0.0; p.values()];
        two[0] = 0.5;
        two[40] = 0.5;
        m.set_probabilities(&two);
        m.evolve();
        let low: f64 = m.probabilities()[..5].iter().sum();
        assert!(low < 0.4, "the lowest bins kept {low} of an even split");
        let total: f64 = m.probabilities().iter().sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_authors_grid_has_257_values_and_an_outage_at_zero() {
        let p = ModelParams::default();
        assert_eq!(p.values(), 257);
        assert_eq!(p.bin_width(), 3.906_25);
        assert_eq!(p.rate(0), 0.0);
        assert_eq!(p.rate(1), 1.5 * 3.906_25);
        assert_eq!(p.rate(256), 256.5 * 3.906_25);
        // Value 0 delivers nothing: one packet rules it out.
        let mut m = RateModel::new(&p);
        m.observe(1.0);
        assert_eq!(m.probabilities()[0], 0.0);
        // Their to_bin truncates toward zero and clamps.
        assert_eq!(p.value_of(-141.4), 0);
        assert_eq!(p.value_of(3.9), 0);
        assert_eq!(p.value_of(3.906_25), 1);
        assert_eq!(p.value_of(5000.0), 256);
    }

    #[test]
    fn the_authors_kernel_runs_one_value_past_the_upper_reach() {
        // From value 128 (501.95 packets/s), 5 sigma (141.42) reaches value 92 below and 164
        // above; the authors' span runs to 165.
        let p = ModelParams::default();
        let ev = Evolution::new(&p);
        let row = &ev.rows()[128];
        assert_eq!(row.start, 92);
        assert_eq!(row.start + row.weights.len() - 1, 165);
        let sym = Evolution::new(&ModelParams {
            kernel_span: KernelSpan::Symmetric,
            ..ModelParams::default()
        });
        let row = &sym.rows()[128];
        assert_eq!((row.start, row.start + row.weights.len() - 1), (91, 165));
    }

    #[test]
    fn the_tabulated_cdf_is_the_exact_one_read_at_cell_midpoints() {
        let p = ModelParams::default();
        let s = p.sigma * p.tau().sqrt();
        let table = ChangeCdf::new(&p, s);
        let exact = ChangeCdf::new(
            &ModelParams {
                gaussian_cdf: GaussianCdf::Exact,
                ..ModelParams::default()
            },
            s,
        );
        // A cell is 2000 / 32768 = 0.061 packets/s wide: the table's value is the exact CDF
        // half a cell or less away, so it differs by at most 0.031 x the peak density.
        let peak = 1.0 / (s * (2.0 * std::f64::consts::PI).sqrt());
        let mut largest: f64 = 0.0;
        for k in -2000..=2000 {
            let d = k as f64 * 0.0731;
            let diff = (table.at(d) - exact.at(d)).abs();
            largest = largest.max(diff);
            assert!(diff <= 0.0306 * peak + 1e-15, "at {d}: {diff}");
        }
        assert!(largest > 1e-5, "the table is not exact ({largest})");
        // Cell 16384 holds [0, 0.061): the CDF at its midpoint, 0.0305.
        assert_eq!(table.at(0.0), normal_cdf(0.030_517_578_125 / s));
        assert_eq!(table.at(f64::NEG_INFINITY), normal_cdf(-1000.0 / s));
        assert_eq!(table.at(f64::INFINITY), 1.0);
    }

    #[test]
    fn repeated_empty_ticks_move_mass_to_the_outage_bin() {
        let p = ModelParams::default();
        let mut m = RateModel::new(&p);
        let mut last = m.probabilities()[0];
        for tick in 0..25 {
            m.evolve();
            m.observe(0.0);
            let now = m.probabilities()[0];
            assert!(
                now > last,
                "tick {tick}: outage mass {now} did not grow from {last}"
            );
            last = now;
        }
        assert!(last > 0.5, "after 0.5 s of silence the outage holds {last}");
        let mean = m.mean_rate();
        assert!(mean < 60.0, "mean rate {mean} should have collapsed");
    }

    #[test]
    fn observation_centres_on_the_observed_rate() {
        let p = ModelParams::default();
        let mut m = RateModel::new(&p);
        // 10 packets per 20 ms tick is 500 packets/s.
        for _ in 0..100 {
            m.evolve();
            m.observe(10.0);
        }
        assert!(
            (m.mean_rate() - 500.0).abs() < 30.0,
            "mean {}",
            m.mean_rate()
        );
        assert_eq!(m.probabilities()[0], 0.0, "outage can not produce packets");
    }

    #[test]
    fn packets_after_certain_outage_recover() {
        let p = literal();
        let mut m = RateModel::new(&p);
        m.set_probabilities(&point_mass(&p, 0));
        m.observe(3.0);
        let total: f64 = m.probabilities().iter().sum();
        assert!((total - 1.0).abs() < 1e-12);
        assert!(m.mean_rate() > 50.0);
        // On the authors' grid the lowest bin can deliver packets; a few ticks of them move
        // the belief up.
        let p = ModelParams::default();
        let mut m = RateModel::new(&p);
        m.set_probabilities(&point_mass(&p, 0));
        for _ in 0..5 {
            m.evolve();
            m.observe(3.0);
        }
        assert!(m.mean_rate() > 50.0, "mean {}", m.mean_rate());
    }
}
