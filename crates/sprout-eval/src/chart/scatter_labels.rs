//! The labels of a scatter chart: points whose markers overlap (or whose values are equal)
//! form a group with one label (`"reno = compound"`, `"cubic ≈ reno"`), and the labels are
//! placed by the placer, crowded groups first, retried with smaller type when some find no
//! room.

use super::geometry::{dist, BBox, Pt};
use super::placement::{Placement, Placer, AMBIGUOUS};
use super::scatter_points::{same, Drawn, Mark};
use super::style::{HALO, TEXT};
use super::svg::Svg;
use super::text::{text_width, Font};

/// The groups of marks whose markers overlap: each group's member indices (ours first), and
/// each mark's group.
pub(super) struct Groups {
    /// The members of each group, ours before published ones, then by index.
    pub(super) members: Vec<Vec<usize>>,
    /// The group of each mark.
    pub(super) of: Vec<usize>,
}

impl Groups {
    /// Groups the marks whose markers overlap or whose values are equal (union-find).
    pub(super) fn overlapping(marks: &[Mark], drawn: &Drawn) -> Groups {
        let (pos, outer) = (&drawn.pos, &drawn.outer);
        let n = marks.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for i in 0..n {
            for j in i + 1..n {
                let equal = same(marks[i].delay_ms.max(1.0), marks[j].delay_ms.max(1.0))
                    && same(marks[i].y, marks[j].y);
                if equal || dist(pos[i], pos[j]) < outer[i] + outer[j] + 1.0 {
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of = vec![0usize; n];
        for (i, slot) in group_of.iter_mut().enumerate() {
            let r = root(&mut parent, i);
            match (0..groups.len()).find(|&g| groups[g][0] == r) {
                Some(g) => {
                    groups[g].push(i);
                    *slot = g;
                }
                None => {
                    *slot = groups.len();
                    groups.push(vec![i]);
                }
            }
        }
        for g in &mut groups {
            g.sort_by_key(|&i| (marks[i].paper, i)); // ours first
        }
        Groups {
            members: groups,
            of: group_of,
        }
    }
}

/// The text of the one label of a group of points whose markers overlap: one name per point,
/// `=` between points of equal values and `≈` between the others; a published point beside
/// ours of the same scheme adds nothing, and one beside other schemes of ours says "(paper)".
fn group_text(marks: &[Mark], members: &[usize]) -> String {
    let has_ours = members.iter().any(|&i| !marks[i].paper);
    let mut groups: Vec<(f64, f64, Vec<String>)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for &i in members {
        let m = &marks[i];
        if m.paper
            && members
                .iter()
                .any(|&j| !marks[j].paper && marks[j].key == m.key)
        {
            continue;
        }
        let name = if m.paper && has_ours && !m.label.contains('(') {
            format!("{} (paper)", m.label)
        } else {
            m.label.clone()
        };
        if names.contains(&name) {
            continue;
        }
        names.push(name.clone());
        match groups
            .iter_mut()
            .find(|g| same(g.0, m.delay_ms.max(1.0)) && same(g.1, m.y))
        {
            Some(g) => g.2.push(name),
            None => groups.push((m.delay_ms.max(1.0), m.y, vec![name])),
        }
    }
    // "cubic TMobile = reno TMobile" says "cubic = reno TMobile".
    let last_word = |n: &str| n.rsplit_once(' ').map(|(_, w)| w.to_string());
    let common = last_word(&names[0]).filter(|w| {
        names.len() > 1
            && names
                .iter()
                .all(|n| !n.contains('(') && last_word(n).as_ref() == Some(w))
    });
    let short = |n: &String| match &common {
        Some(w) => n[..n.len() - w.len() - 1].to_string(),
        None => n.clone(),
    };
    let text = groups
        .iter()
        .map(|g| g.2.iter().map(short).collect::<Vec<_>>().join(" = "))
        .collect::<Vec<_>>()
        .join(" ≈ ");
    match common {
        Some(w) => format!("{text} {w}"),
        None => text,
    }
}

/// A group label as lines no wider than `max_w` where it can be broken (after a `=` or `≈`).
fn wrap_group_text(text: &str, f: Font, max_w: f64) -> Vec<String> {
    if text_width(text, f.size, f.bold) <= max_w {
        return vec![text.to_string()];
    }
    // Pieces that end with their separator.
    let mut pieces: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        if word == "=" || word == "≈" {
            pieces.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        pieces.push(cur);
    }
    let mut lines: Vec<String> = Vec::new();
    for piece in pieces {
        match lines.last_mut() {
            Some(last) if text_width(&format!("{last} {piece}"), f.size, f.bold) <= max_w => {
                last.push(' ');
                last.push_str(&piece);
            }
            _ => lines.push(piece),
        }
    }
    lines
}

/// A group's label: its lines, font and colour.
struct GroupLabel {
    lines: Vec<String>,
    font: Font,
    colour: &'static str,
}

/// A label as placed: its group, where it went, and its lines and font at the time.
type Placed = (usize, Placement, Vec<String>, Font);

/// Each group's centre and the radius around it that covers its markers.
fn centres(groups: &Groups, drawn: &Drawn) -> Vec<(Pt, f64)> {
    let (pos, outer) = (&drawn.pos, &drawn.outer);
    groups
        .members
        .iter()
        .map(|g| {
            let k = g.len() as f64;
            let c = (
                g.iter().map(|&i| pos[i].0).sum::<f64>() / k,
                g.iter().map(|&i| pos[i].1).sum::<f64>() / k,
            );
            let r = g
                .iter()
                .map(|&i| dist(c, pos[i]) + outer[i])
                .fold(0.0, f64::max);
            (c, r)
        })
        .collect()
}

/// The order in which the groups are labelled: groups with our points first, crowded ones
/// (more groups within 90 px) before lonely ones.
fn label_order(marks: &[Mark], groups: &Groups, centre: &[(Pt, f64)]) -> Vec<usize> {
    let crowd = |g: usize| {
        centre
            .iter()
            .enumerate()
            .filter(|&(h, (c, _))| h != g && dist(*c, centre[g].0) < 90.0)
            .count()
    };
    let mut order: Vec<usize> = (0..groups.members.len()).collect();
    order.sort_by_key(|&g| {
        (
            groups.members[g].iter().all(|&i| marks[i].paper),
            std::cmp::Reverse(crowd(g)),
            g,
        )
    });
    order
}

/// Each group's label: bold for groups with our points, italic for published ones only; in
/// the scheme's colour if all members share it.
fn group_labels(marks: &[Mark], drawn: &Drawn, groups: &Groups) -> Vec<GroupLabel> {
    let colour = &drawn.colour;
    groups
        .members
        .iter()
        .map(|members| {
            let ours = members.iter().any(|&i| !marks[i].paper);
            let font = if ours {
                Font::bold(12.0)
            } else {
                Font {
                    size: 11.0,
                    bold: false,
                    italic: true,
                }
            };
            let col = if members.iter().all(|&i| colour[i] == colour[members[0]]) {
                colour[members[0]]
            } else {
                TEXT
            };
            GroupLabel {
                lines: wrap_group_text(&group_text(marks, members), font, 240.0),
                font,
                colour: col,
            }
        })
        .collect()
}

/// Greedy placement in `order`; if a label finds no free position, the placement is redone
/// with the labels that failed placed first (a few times at most), and after six tries with
/// smaller type in narrower lines for them. Returns the placement with the fewest failures.
#[allow(clippy::too_many_arguments)]
fn place_labels(
    placer: &Placer,
    centre: &[(Pt, f64)],
    mut order: Vec<usize>,
    labels: &mut [GroupLabel],
    marks: &[Mark],
    groups: &Groups,
    bounds: &BBox,
) -> Vec<Placed> {
    let mut best: Option<(usize, Vec<Placed>)> = None;
    for attempt in 0..12 {
        let mut pl = placer.clone();
        // Crowded charts: after four tries, a label may sit beside a point also near another.
        pl.ambiguity = if attempt < 4 { AMBIGUOUS } else { 0.0 };
        let mut placed = Vec::new();
        let mut failed = Vec::new();
        for &g in &order {
            let (c, r) = centre[g];
            let p = pl.place(c, r, &labels[g].lines, labels[g].font, bounds);
            if !p.free {
                failed.push(g);
            }
            placed.push((g, p, labels[g].lines.clone(), labels[g].font));
        }
        let n_failed = failed.len();
        if best.as_ref().is_none_or(|b| n_failed < b.0) {
            best = Some((n_failed, placed));
        }
        if n_failed == 0 {
            break;
        }
        // Then smaller type, in narrower lines, for the labels that found no room.
        if attempt >= 6 {
            for &g in &failed {
                let f = &mut labels[g].font;
                f.size = (f.size - 1.0).max(8.0);
                let text = group_text(marks, &groups.members[g]);
                labels[g].lines = wrap_group_text(&text, labels[g].font, 160.0);
            }
        }
        order.retain(|g| !failed.contains(g));
        failed.extend(order);
        order = failed;
    }
    best.map(|b| b.1).unwrap_or_default()
}

/// One label per group of overlapping points, placed clear of everything `placer` holds
/// inside the plot `frame`: the leaders go into `under` (drawn below the markers), the texts
/// into the returned fragment (drawn above them).
pub(super) fn label_groups(
    marks: &[Mark],
    drawn: &Drawn,
    groups: &Groups,
    placer: &Placer,
    frame: &BBox,
    under: &mut Svg,
) -> Svg {
    let centre = centres(groups, drawn);
    let order = label_order(marks, groups, &centre);
    let bounds = frame.inflate(-2.0);
    let mut labels = group_labels(marks, drawn, groups);
    let placed = place_labels(placer, &centre, order, &mut labels, marks, groups, &bounds);
    let mut over = Svg::fragment();
    for (g, p, lines, font) in placed {
        let (lines, font, col) = (&lines, &font, labels[g].colour);
        if let Some(l) = p.leader {
            under.line(
                "leader",
                l.a,
                l.b,
                col,
                1.0,
                "",
                &format!(r#"data-for="{}l{g}""#, drawn.prefix),
            );
        }
        let pre = &drawn.prefix;
        let ids: Vec<String> = groups.members[g]
            .iter()
            .map(|i| format!("{pre}p{i}"))
            .collect();
        over.text_lines(
            p.x,
            p.y,
            lines,
            *font,
            p.anchor,
            col,
            &format!(
                r#"class="point-label" id="{pre}l{g}" data-points="{}" {HALO}"#,
                ids.join(" ")
            ),
        );
    }
    over
}
