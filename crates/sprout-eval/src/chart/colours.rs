//! Colours: one per scheme on the scatter charts (fixed for the known schemes, from a
//! fallback palette for others), and one per label in order of first appearance on the charts
//! over time.

use std::collections::HashMap;

use crate::paper::scheme_key;

/// The colour used for a scheme (by its normalized key), if it is one of the known schemes.
fn known_color(key: &str) -> Option<&'static str> {
    Some(match key {
        "sprout" => "#d62728",
        "sprout-ewma" => "#ff7f0e",
        "cubic" => "#1f77b4",
        "cubic-codel" => "#17becf",
        "vegas" => "#2ca02c",
        "ledbat" => "#9467bd",
        "compound" => "#8c564b",
        "bbr" => "#e377c2",
        "skype" => "#7f7f7f",
        "facetime" => "#bcbd22",
        "hangout" => "#393b79",
        "omniscient" => "#000000",
        _ => return None,
    })
}

/// The colours given to unknown schemes, in order of first appearance.
const FALLBACK: [&str; 8] = [
    "#637939", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
];

/// Key that groups a label with its published counterpart: the scheme key of the label with
/// any parenthesized suffix removed (`"Sprout (paper)"` -> `"sprout"`).
pub(super) fn label_key(label: &str) -> String {
    let base = label.split('(').next().unwrap_or(label);
    scheme_key(base)
}

/// The colours of the schemes of one scatter chart: known schemes keep their colour, unknown
/// ones get colours from a fallback palette in order of first appearance.
pub(super) struct Palette {
    assigned: HashMap<String, &'static str>,
    next: usize,
}

impl Palette {
    /// A palette with no unknown scheme seen yet.
    pub(super) fn new() -> Self {
        Palette {
            assigned: HashMap::new(),
            next: 0,
        }
    }

    /// The colour of the scheme of key `key` (see [`label_key`]).
    pub(super) fn color(&mut self, key: &str) -> &'static str {
        if let Some(c) = known_color(key) {
            return c;
        }
        if let Some(c) = self.assigned.get(key) {
            return c;
        }
        let c = FALLBACK[self.next % FALLBACK.len()];
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
