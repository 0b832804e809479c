//! Plane geometry for keeping texts clear of each other, of markers and of lines: boxes,
//! points, segments and their intersections, in pixels.

/// An axis-aligned box, pixels (`x0 <= x1`, `y0 <= y1`, y growing downwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct BBox {
    /// Left edge, px.
    pub(super) x0: f64,
    /// Top edge, px.
    pub(super) y0: f64,
    /// Right edge, px.
    pub(super) x1: f64,
    /// Bottom edge, px.
    pub(super) y1: f64,
}

/// A point `(x, y)`, pixels.
pub(super) type Pt = (f64, f64);

/// A line segment from `a` to `b`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seg {
    /// One end.
    pub(super) a: Pt,
    /// The other end.
    pub(super) b: Pt,
}

impl BBox {
    /// The box grown by `d` pixels on every side (shrunk when `d` is negative).
    pub(super) fn inflate(&self, d: f64) -> BBox {
        BBox {
            x0: self.x0 - d,
            y0: self.y0 - d,
            x1: self.x1 + d,
            y1: self.y1 + d,
        }
    }

    /// Whether the two boxes overlap (touching edges do not).
    pub(super) fn intersects(&self, o: &BBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// Whether `o` lies wholly inside this box.
    pub(super) fn contains(&self, o: &BBox) -> bool {
        o.x0 >= self.x0 && o.x1 <= self.x1 && o.y0 >= self.y0 && o.y1 <= self.y1
    }

    /// The point of the box nearest to `p`.
    pub(super) fn nearest(&self, p: Pt) -> Pt {
        (p.0.clamp(self.x0, self.x1), p.1.clamp(self.y0, self.y1))
    }

    /// Whether the box meets the circle of radius `r` around `(cx, cy)`.
    pub(super) fn hits_circle(&self, cx: f64, cy: f64, r: f64) -> bool {
        let (nx, ny) = self.nearest((cx, cy));
        (nx - cx).powi(2) + (ny - cy).powi(2) < r * r
    }

    /// Whether the segment meets the box (Liang-Barsky clipping).
    pub(super) fn hits_seg(&self, s: Seg) -> bool {
        let (dx, dy) = (s.b.0 - s.a.0, s.b.1 - s.a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [
            (-dx, s.a.0 - self.x0),
            (dx, self.x1 - s.a.0),
            (-dy, s.a.1 - self.y0),
            (dy, self.y1 - s.a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// The distance between two points, px.
pub(super) fn dist(a: Pt, b: Pt) -> f64 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

/// Whether two segments cross properly (each one's ends on either side of the other).
pub(super) fn segs_cross(s: Seg, t: Seg) -> bool {
    let orient = |a: Pt, b: Pt, c: Pt| (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0);
    let d1 = orient(t.a, t.b, s.a);
    let d2 = orient(t.a, t.b, s.b);
    let d3 = orient(s.a, s.b, t.a);
    let d4 = orient(s.a, s.b, t.b);
    ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0))
        && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0))
}

/// Whether the segment passes within `r` of the point `c`.
pub(super) fn seg_hits_circle(s: Seg, c: Pt, r: f64) -> bool {
    let (dx, dy) = (s.b.0 - s.a.0, s.b.1 - s.a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((c.0 - s.a.0) * dx + (c.1 - s.a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    dist((s.a.0 + t * dx, s.a.1 + t * dy), c) < r
}

/// The segments of a polyline.
pub(super) fn polyline_segs(pts: &[Pt]) -> impl Iterator<Item = Seg> + '_ {
    pts.windows(2).map(|w| Seg { a: w[0], b: w[1] })
}

/// The four edges of a rectangle.
pub(super) fn edges(b: &BBox) -> [Seg; 4] {
    let (a, c, d, e) = ((b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1));
    [
        Seg { a, b: c },
        Seg { a: c, b: d },
        Seg { a: d, b: e },
        Seg { a: e, b: a },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_and_box_geometry() {
        let b = BBox {
            x0: 0.0,
            y0: 0.0,
            x1: 10.0,
            y1: 10.0,
        };
        let s = |a: Pt, b: Pt| Seg { a, b };
        assert!(b.hits_seg(s((-5.0, 5.0), (15.0, 5.0))));
        assert!(b.hits_seg(s((5.0, 5.0), (6.0, 6.0))));
        assert!(!b.hits_seg(s((-5.0, -1.0), (15.0, -1.0))));
        assert!(!b.hits_seg(s((11.0, 0.0), (20.0, 20.0))));
        assert!(segs_cross(
            s((0.0, 0.0), (2.0, 2.0)),
            s((0.0, 2.0), (2.0, 0.0))
        ));
        assert!(!segs_cross(
            s((0.0, 0.0), (1.0, 1.0)),
            s((0.0, 2.0), (2.0, 3.0))
        ));
        assert!(b.hits_circle(12.0, 5.0, 2.5));
        assert!(!b.hits_circle(12.0, 12.0, 2.5));
    }
}
