//! Colours: the one map from scheme to colour that every chart draws a scheme in
//! ([`scheme_colour`]), colours for series that are not schemes (model variants, confidence
//! levels, loss rates: [`SERIES`], never a scheme's colour), and one colour per label in order
//! of first appearance on the charts over time.

use std::collections::HashMap;

use crate::paper::scheme_key;

/// Every scheme's colour, by its normalized key (`crate::paper::scheme_key`): the schemes this
/// project runs and those the paper measured. The one place a scheme's colour is chosen.
const SCHEMES: [(&str, &str); 19] = [
    ("sprout", "#d62728"),
    // Sprout on the wide rate model: a wine, near Sprout's red in hue but clearly apart from
    // it (a dark red was hard to tell from it), from BBR's pink and from Sprout-EWMA's orange.
    ("sprout-wide", "#8e0152"),
    ("sprout-ewma", "#ff7f0e"),
    ("cubic", "#1f77b4"),
    ("cubic-codel", "#17becf"),
    ("reno", "#637939"),
    ("vegas", "#2ca02c"),
    ("ledbat", "#9467bd"),
    ("compound", "#8c564b"),
    ("bbr", "#e377c2"),
    ("skype", "#7f7f7f"),
    ("facetime", "#bcbd22"),
    ("hangout", "#393b79"),
    ("omniscient", "#000000"),
    ("direct", "#6b4226"),
    ("copa", "#00796b"),
    ("copa-0.1", "#4db6ac"),
    ("gcc", "#4a1486"),
    // The real WebRTC call (emulated only): a lighter purple than gcc, its model.
    ("webrtc", "#807dba"),
];

/// The colour of the scheme of key `key` (see [`label_key`]), if it is a known scheme.
pub(super) fn scheme_colour(key: &str) -> Option<&'static str> {
    SCHEMES.iter().find(|(k, _)| *k == key).map(|(_, c)| *c)
}

/// The colours of series that are not schemes, in order of first appearance on a chart; none
/// is a scheme's colour, so that a scheme's colour always means that scheme.
pub(super) const SERIES: [&str; 10] = [
    "#5254a3", "#8ca252", "#bd9e39", "#ad494a", "#a55194", "#3a8a8c", "#e7969c", "#9c9ede",
    "#8c6d31", "#b5cf6b",
];

/// The order in which [`Palette::spread`] hands out [`SERIES`]: indigo, teal, brown,
/// magenta, then the rest, so that the first few are far apart from each other and from the
/// red, wine and orange of Sprout's schemes (the order of [`SERIES`] puts an olive next to a
/// gold).
const SPREAD: [usize; 10] = [0, 5, 8, 4, 1, 2, 3, 6, 7, 9];

/// [`SERIES`] in its own order.
const IN_ORDER: [usize; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/// Key that groups a label with its published counterpart: the scheme key of the label with
/// any parenthesized suffix removed (`"Sprout (paper)"` -> `"sprout"`).
pub(super) fn label_key(label: &str) -> String {
    let base = label.split('(').next().unwrap_or(label);
    scheme_key(base)
}

/// The colours of the series of one chart: schemes in their colour ([`scheme_colour`]), other
/// series in the colours of [`SERIES`] in order of first appearance (which repeat after ten).
pub(super) struct Palette {
    assigned: HashMap<String, &'static str>,
    next: usize,
    order: &'static [usize; 10],
}

impl Palette {
    /// A palette with no unknown scheme seen yet, handing out [`SERIES`] in its order.
    pub(super) fn new() -> Self {
        Palette {
            assigned: HashMap::new(),
            next: 0,
            order: &IN_ORDER,
        }
    }

    /// A palette handing out [`SERIES`] in the order [`SPREAD`]: for a chart whose few
    /// non-scheme series are drawn beside Sprout's schemes (the frontier chart's models).
    pub(super) fn spread() -> Self {
        Palette {
            order: &SPREAD,
            ..Palette::new()
        }
    }

    /// The colour of the series of key `key` (see [`label_key`]).
    pub(super) fn color(&mut self, key: &str) -> &'static str {
        if let Some(c) = scheme_colour(key) {
            return c;
        }
        if let Some(c) = self.assigned.get(key) {
            return c;
        }
        let c = SERIES[self.order[self.next % SERIES.len()]];
        self.next += 1;
        self.assigned.insert(key.to_string(), c);
        c
    }
}

/// The colours of the labels of a chart over time: the `k`-th distinct label (in order of
/// first appearance) gets the `k`-th colour of a palette, which repeats if it is too short.
pub(super) struct LabelColours {
    labels: Vec<String>,
    palette: &'static [&'static str],
}

impl LabelColours {
    /// The distinct `labels` in order of first appearance, coloured from `palette`.
    pub(super) fn new<'a>(
        labels: impl IntoIterator<Item = &'a str>,
        palette: &'static [&'static str],
    ) -> Self {
        let mut distinct: Vec<String> = Vec::new();
        for label in labels {
            if !distinct.iter().any(|l| l == label) {
                distinct.push(label.to_string());
            }
        }
        LabelColours {
            labels: distinct,
            palette,
        }
    }

    /// The distinct labels, in order of first appearance.
    pub(super) fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The colour of `label` (the first colour if it is not one of the labels).
    pub(super) fn colour(&self, label: &str) -> &'static str {
        let k = self.labels.iter().position(|l| l == label).unwrap_or(0);
        self.palette[k % self.palette.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_and_other_series_never_share_a_colour() {
        let mut all: Vec<&str> = SCHEMES.iter().map(|(_, c)| *c).collect();
        all.extend(SERIES);
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a colour is used twice");
        let emulated_only = sprout_sim::scheme::Scheme::EMULATED_ONLY;
        for s in sprout_sim::scheme::Scheme::known().chain(emulated_only) {
            assert!(
                scheme_colour(s.key()).is_some(),
                "{} has no colour",
                s.key()
            );
        }
        let mut p = Palette::new();
        assert_eq!(p.color("reno"), "#637939");
        assert_eq!(p.color("sprout-5%"), SERIES[0]);
        assert_eq!(p.color("authors"), SERIES[1]);
        assert_eq!(p.color("sprout-5%"), SERIES[0]);
        let mut p = Palette::spread();
        assert_eq!(p.color("sprout-wide"), "#8e0152");
        assert_eq!(p.color("wide-nb"), SERIES[0]);
        assert_eq!(p.color("wide-floor25"), SERIES[5]);
        assert_eq!(p.color("wide-vol"), SERIES[8]);
        let mut spread = SPREAD;
        spread.sort_unstable();
        assert_eq!(spread, IN_ORDER, "every colour of SERIES once");
    }
}
