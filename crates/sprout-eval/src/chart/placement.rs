//! Label placement: a greedy placer that puts each label where it meets no label placed
//! before, no marker and no line, beside its point if it can, else further out with a leader
//! line, else anywhere in the plot.

use super::geometry::{dist, seg_hits_circle, segs_cross, BBox, Pt, Seg};
use super::text::{lines_height, text_pos, text_width, Anchor, Font, PAD};

/// Where a label went: the text's anchor and first baseline point, and the leader
/// joining it to its point when it is not beside it.
pub(super) struct Placement {
    /// Which point of the text `x` is.
    pub(super) anchor: Anchor,
    /// The text's anchor point, px.
    pub(super) x: f64,
    /// The first line's baseline, px.
    pub(super) y: f64,
    /// The line from the point to the label, if the label is not beside it.
    pub(super) leader: Option<Seg>,
    /// False if no free position was found (the label then overlaps something).
    pub(super) free: bool,
}

/// What labels must keep clear of: the labels already placed, markers (circles) and lines.
#[derive(Default, Clone)]
pub(super) struct Placer {
    /// The boxes of the labels placed so far (and of other texts to avoid).
    pub(super) boxes: Vec<BBox>,
    /// Markers: centre and radius, px.
    pub(super) circles: Vec<(Pt, f64)>,
    /// Lines of the chart (series, frames, connectors).
    pub(super) segs: Vec<Seg>,
    /// The leaders of the labels placed so far.
    pub(super) leaders: Vec<Seg>,
    /// What a position beside the point costs more when it could be read as another marker's
    /// label: 0, or [`AMBIGUOUS`] to prefer a position on the nearer rings, with a leader.
    pub(super) ambiguity: f64,
}

/// See [`Placer::ambiguity`].
pub(super) const AMBIGUOUS: f64 = 45.0;

/// The distances (px, beyond the point's radius) of the rings of positions tried with a leader.
const RINGS: [f64; 10] = [
    12.0, 22.0, 34.0, 48.0, 64.0, 82.0, 104.0, 130.0, 160.0, 200.0,
];

/// Which side of its attachment point a label's box lies on.
#[derive(Clone, Copy)]
enum Side {
    E,
    W,
    N,
    S,
    NE,
    NW,
    SE,
    SW,
}

/// A position found for a label, with what it costs (lower is better).
struct Candidate {
    cost: f64,
    bb: BBox,
    anchor: Anchor,
    leader: Option<Seg>,
}

/// The search for the cheapest free position of one label of `w` x `h` pixels (padding
/// included) for the point `p`, whose markers lie within `r` of it, inside `bounds`.
struct Search<'a> {
    placer: &'a Placer,
    bounds: &'a BBox,
    p: Pt,
    r: f64,
    w: f64,
    h: f64,
    best: Option<Candidate>,
}

impl Search<'_> {
    /// Keeps the position if it is cheaper than the best so far, inside the bounds, free, and
    /// its leader (if any) crosses no label.
    fn consider(&mut self, cost: f64, bb: BBox, anchor: Anchor, leader: Option<Seg>) {
        if self.best.as_ref().is_some_and(|b| b.cost <= cost) {
            return;
        }
        if !self.bounds.contains(&bb) || !self.placer.box_free(&bb) {
            return;
        }
        if let Some(l) = leader {
            if !self.placer.leader_ok(l) {
                return;
            }
        }
        self.best = Some(Candidate {
            cost,
            bb,
            anchor,
            leader,
        });
    }

    /// The twelve positions touching the point, in order of preference.
    fn beside(&mut self) {
        let (p, h) = (self.p, self.h);
        let g = self.r + 2.0;
        let k = g * std::f64::consts::FRAC_1_SQRT_2;
        let beside = [
            ((p.0 + g, p.1), Side::E),
            ((p.0 - g, p.1), Side::W),
            ((p.0, p.1 - g), Side::N),
            ((p.0, p.1 + g), Side::S),
            ((p.0 + k, p.1 - k), Side::NE),
            ((p.0 - k, p.1 - k), Side::NW),
            ((p.0 + k, p.1 + k), Side::SE),
            ((p.0 - k, p.1 + k), Side::SW),
            ((p.0 + g, p.1 - h / 3.0), Side::E),
            ((p.0 + g, p.1 + h / 3.0), Side::E),
            ((p.0 - g, p.1 - h / 3.0), Side::W),
            ((p.0 - g, p.1 + h / 3.0), Side::W),
        ];
        for (i, &(q, side)) in beside.iter().enumerate() {
            let (bb, anchor) = Placer::box_at(q, self.w, h, side);
            let cost = i as f64
                + if self.placer.ambiguous(&bb, p, self.r) {
                    self.placer.ambiguity
                } else {
                    0.0
                };
            self.consider(cost, bb, anchor, None);
        }
    }

    /// Positions on rings further out, each joined to the point by a leader.
    fn on_rings(&mut self) {
        let (p, r) = (self.p, self.r);
        for d in RINGS {
            for j in 0..24 {
                let th = j as f64 * std::f64::consts::PI / 12.0;
                let (cs, sn) = (th.cos(), th.sin());
                let q = (p.0 + (r + d) * cs, p.1 + (r + d) * sn);
                let side = if cs > 0.5 {
                    Side::E
                } else if cs < -0.5 {
                    Side::W
                } else if sn < 0.0 {
                    Side::N
                } else {
                    Side::S
                };
                let (bb, anchor) = Placer::box_at(q, self.w, self.h, side);
                let leader = leader_to(p, r, &bb);
                let cost = 20.0
                    + d
                    + leader.map_or(0.0, |l| self.placer.leader_cost(l, p, r))
                    + j as f64 * 0.01;
                self.consider(cost, bb, anchor, leader);
            }
        }
    }

    /// Every position of a 6-pixel grid over the bounds, with a leader.
    fn anywhere(&mut self) {
        let (p, r, w, h) = (self.p, self.r, self.w, self.h);
        let bounds = *self.bounds;
        let mut y = bounds.y0;
        while y + h <= bounds.y1 {
            let mut x = bounds.x0;
            while x + w <= bounds.x1 {
                let bb = BBox {
                    x0: x,
                    y0: y,
                    x1: x + w,
                    y1: y + h,
                };
                let anchor = if bb.x0 >= p.0 {
                    Anchor::Start
                } else if bb.x1 <= p.0 {
                    Anchor::End
                } else {
                    Anchor::Middle
                };
                let leader = leader_to(p, r, &bb);
                let cost = 20.0
                    + dist(p, bb.nearest(p))
                    + leader.map_or(0.0, |l| self.placer.leader_cost(l, p, r));
                self.consider(cost, bb, anchor, leader);
                x += 6.0;
            }
            y += 6.0;
        }
    }
}

/// The leader from the edge of the point `p` (radius `r`) to the nearest point of the box
/// `bb`, or none if the box is next to the point.
fn leader_to(p: Pt, r: f64, bb: &BBox) -> Option<Seg> {
    let q = bb.nearest(p);
    let d = dist(p, q);
    if d <= r + 3.0 {
        return None;
    }
    let u = ((q.0 - p.0) / d, (q.1 - p.1) / d);
    let start = (p.0 + u.0 * (r + 1.0), p.1 + u.1 * (r + 1.0));
    Some(Seg { a: start, b: q })
}

impl Placer {
    /// Whether the box meets no label, marker, line or leader.
    fn box_free(&self, bb: &BBox) -> bool {
        self.boxes.iter().all(|b| !b.intersects(bb))
            && self
                .circles
                .iter()
                .all(|&((x, y), r)| !bb.hits_circle(x, y, r))
            && self.segs.iter().all(|s| !bb.hits_seg(*s))
            && self.leaders.iter().all(|s| !bb.hits_seg(*s))
    }

    /// Whether a label beside the point `p` (radius `r`) could be read as another marker's:
    /// another marker is nearly as close to its box, or closer to its centre.
    fn ambiguous(&self, bb: &BBox, p: Pt, r: f64) -> bool {
        let own = dist(p, bb.nearest(p)) - r;
        let mid = ((bb.x0 + bb.x1) / 2.0, (bb.y0 + bb.y1) / 2.0);
        let own_mid = dist(p, mid) - r;
        self.circles.iter().any(|&(c, cr)| {
            dist(c, p) + cr > r + 1.5
                && (dist(c, bb.nearest(c)) - cr < own + 4.0 || dist(c, mid) - cr < own_mid)
        })
    }

    /// Whether a leader crosses no label placed so far.
    fn leader_ok(&self, s: Seg) -> bool {
        self.boxes.iter().all(|b| !b.hits_seg(s))
    }

    /// How bad a leader from the point `own` (radius `r`) is: markers and lines it crosses.
    fn leader_cost(&self, s: Seg, own: Pt, r: f64) -> f64 {
        let mut cost = 0.0;
        for &(p, pr) in &self.circles {
            if dist(p, own) + pr <= r + 1.5 {
                continue; // one of the labelled markers
            }
            if seg_hits_circle(s, p, pr) {
                cost += 80.0;
            }
        }
        for t in &self.segs {
            if segs_cross(s, *t) {
                cost += 15.0;
            }
        }
        for t in &self.leaders {
            if segs_cross(s, *t) {
                cost += 80.0;
            }
        }
        cost
    }

    /// A box of size `w` x `h` on `side` of the point `p`.
    fn box_at(p: Pt, w: f64, h: f64, side: Side) -> (BBox, Anchor) {
        let (x0, y0, anchor) = match side {
            Side::E => (p.0, p.1 - h / 2.0, Anchor::Start),
            Side::W => (p.0 - w, p.1 - h / 2.0, Anchor::End),
            Side::N => (p.0 - w / 2.0, p.1 - h, Anchor::Middle),
            Side::S => (p.0 - w / 2.0, p.1, Anchor::Middle),
            Side::NE => (p.0, p.1 - h, Anchor::Start),
            Side::NW => (p.0 - w, p.1 - h, Anchor::End),
            Side::SE => (p.0, p.1, Anchor::Start),
            Side::SW => (p.0 - w, p.1, Anchor::End),
        };
        (
            BBox {
                x0,
                y0,
                x1: x0 + w,
                y1: y0 + h,
            },
            anchor,
        )
    }

    /// Places a label for the point (or group of points) at `p` whose markers lie within `r`
    /// of it: the cheapest free position beside it, else on rings further out with a leader,
    /// else anywhere in `bounds` with a leader. Records the label (and leader) as obstacles.
    /// If nothing is free (never seen in practice) the label goes to the right of the point.
    pub(super) fn place(
        &mut self,
        p: Pt,
        r: f64,
        lines: &[String],
        f: Font,
        bounds: &BBox,
    ) -> Placement {
        let w = lines
            .iter()
            .map(|s| text_width(s, f.size, f.bold))
            .fold(0.0, f64::max)
            + 2.0 * PAD;
        let h = lines_height(lines.len(), f) + 2.0 * PAD;
        let mut search = Search {
            placer: self,
            bounds,
            p,
            r,
            w,
            h,
            best: None,
        };
        search.beside();
        if search.best.as_ref().is_none_or(|b| b.cost >= AMBIGUOUS) {
            search.on_rings();
        }
        if search.best.is_none() {
            search.anywhere();
        }
        let free = search.best.is_some();
        let (bb, anchor, leader) = match search.best {
            Some(b) => (b.bb, b.anchor, b.leader),
            None => {
                let (bb, anchor) = Self::box_at((p.0 + (r + 2.0), p.1), w, h, Side::E);
                (bb, anchor, None)
            }
        };
        self.boxes.push(bb);
        if let Some(l) = leader {
            self.leaders.push(l);
        }
        let (x, y) = text_pos(&bb, f, anchor);
        Placement {
            anchor,
            x,
            y,
            leader,
            free,
        }
    }

    /// The first of `candidates` (boxes with their anchors) that is free and inside its
    /// bounds; recorded as an obstacle.
    pub(super) fn first_free(
        &mut self,
        candidates: &[(BBox, Anchor, BBox)],
    ) -> Option<(BBox, Anchor)> {
        let found = candidates
            .iter()
            .find(|(bb, _, bounds)| bounds.contains(bb) && self.box_free(bb))
            .map(|&(bb, anchor, _)| (bb, anchor));
        if let Some((bb, _)) = found {
            self.boxes.push(bb);
        }
        found
    }
}
