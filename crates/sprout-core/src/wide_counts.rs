//! The count distributions the wide forecast takes per value and per mixture: the negative
//! binomial (a Poisson whose mean is Gamma-distributed; a Poisson when its variance is its
//! mean) below [`SMALL_MEAN`] packets, the Normal above. Shared by the moments' forecast
//! ([`crate::wide_forecast`]) and the spread beliefs' tables ([`crate::wide_mixture`]).

/// Below this mean (packets by the horizon) the cumulative count is taken as negative
/// binomial, summed term by term, rather than Normal: the Normal's lower tail is far too
/// heavy at small means (at a mean of 5 it puts 12% on no packet at all, the Poisson 0.7%),
/// which would lock a sender that the forecast allows no packet into sending none.
pub const SMALL_MEAN: f64 = 50.0;

/// How many terms of the negative binomial of mean `mu` and variance `mu + v` hold all its
/// mass: to the mean plus 40 sd (and 10), past which nothing is left to add whatever rounding
/// does.
pub fn terms_bound(mu: f64, v: f64) -> usize {
    (mu + 40.0 * (mu + v.max(0.0)).sqrt() + 10.0).ceil() as usize
}

/// P(N <= c) for the negative binomial of mean `mu` and variance `mu + v` (a Poisson when `v`
/// is 0), by summing its terms up to `c`, or until they add up to 1, or to the mean plus 40
/// sd, past which nothing is left to add (the sum had run on to `c`, tens of thousands of
/// terms, when rounding kept it just below 1).
pub fn negative_binomial_cdf(mu: f64, v: f64, c: f64) -> f64 {
    if c < 0.0 {
        return 0.0;
    }
    if mu <= 0.0 {
        return 1.0;
    }
    let v = v.max(0.0);
    let bound = terms_bound(mu, v) as f64;
    let mut last = 0.0;
    for (k, acc) in negative_binomial_cdfs(mu, v).enumerate() {
        last = acc;
        if k as f64 >= c.min(bound) || acc >= 1.0 {
            break;
        }
    }
    last.min(1.0)
}

/// P(N <= 0), P(N <= 1), ... for the negative binomial of mean `mu` and variance `mu + v` (a
/// Poisson when `v` is 0), each term from the one before ([`negative_binomial`]).
pub fn negative_binomial_cdfs(mu: f64, v: f64) -> impl Iterator<Item = f64> {
    let (p0, a, b) = negative_binomial(mu, v);
    std::iter::successors(Some((p0, p0, 0.0f64)), move |&(term, acc, k)| {
        let term = term * ((k * a + b) / (k + 1.0));
        Some((term, acc + term, k + 1.0))
    })
    .map(|(_, acc, _)| acc)
}

/// The negative binomial of mean `mu` and variance `mu + v` as (P(N = 0), a, b), its terms
/// related by P(N = k + 1) / P(N = k) = (k a + b) / (k + 1), with a = v / (mu + v) and
/// b = mu^2 / (mu + v); a Poisson when `v` is 0.
pub fn negative_binomial(mu: f64, v: f64) -> (f64, f64, f64) {
    let a = v / (mu + v);
    let b = mu * mu / (mu + v);
    // ln P(N = 0) = r ln p = -(mu^2 / v) ln(1 + v / mu), -mu as v / mu goes to 0.
    let ratio = v / mu;
    let ln_p0 = if ratio < 1e-9 {
        -mu
    } else {
        -(mu / ratio) * ratio.ln_1p()
    };
    (ln_p0.exp(), a, b)
}
