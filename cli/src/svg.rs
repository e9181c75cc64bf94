//! Inline SVG charts for `glk report`: no library, no script, text escaped. Each chart is
//! one `<svg>` element with a title, axes with labelled ticks, and a legend.

use std::fmt::Write as _;

/// Colours for series, in order (colour-blind-safe palette).
pub const COLOURS: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#000000",
];

const W: f64 = 860.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 66.0;
const BOTTOM: f64 = 46.0;

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

fn open(out: &mut String, id: &str, title: &str) {
    let _ = write!(
        out,
        "<svg class=\"chart\" id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\"><title>{t}</title><rect width=\"{W}\" height=\"{H}\" fill=\"#fff\"/><text x=\"{LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{t}</text>",
        esc(id),
        t = esc(title)
    );
}

/// The series' names with their colours (the `k`th series in `COLOURS[k]`, cycling, as
/// the charts draw them).
fn legend<'a>(out: &mut String, names: impl Iterator<Item = &'a str>) {
    // Under the title, left to right, wrapping (two rows at most fit above the plot).
    let (mut x, mut y) = (LEFT, 30.0);
    for (name, colour) in names.zip(COLOURS.iter().cycle()) {
        let w = 22.0 + 6.6 * name.chars().count() as f64;
        if x + w > W - RIGHT {
            x = LEFT;
            y += 15.0;
        }
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"11\" height=\"11\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
            x + 15.0,
            y + 10.0,
            esc(name)
        );
        x += w + 8.0;
    }
}

/// A "nice" upper bound and tick step for `max`: steps of 1, 2 or 5 times a power of ten,
/// at most six ticks.
fn nice(max: f64) -> (f64, f64) {
    if max <= 0.0 {
        return (1.0, 1.0);
    }
    let mag = 10f64.powf((max / 5.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| max / s <= 6.0)
        .unwrap_or(mag * 10.0);
    ((max / step).ceil() * step, step)
}

fn y_axis(out: &mut String, ymax: f64, step: f64, label: &str) {
    let plot_h = H - TOP - BOTTOM;
    let mut v = 0.0;
    while v <= ymax + step / 2.0 {
        let y = H - BOTTOM - v / ymax * plot_h;
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            short(v)
        );
        v += step;
    }
    let _ = write!(
        out,
        "<text x=\"14\" y=\"{:.1}\" font-size=\"11\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">{}</text><line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#333\"/><line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/>",
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
        esc(label),
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `2^i` ns as a short duration.
fn pow2_label(i: usize) -> String {
    let ns = 2f64.powi(i as i32);
    if ns >= 1e9 {
        format!("{:.0}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.0}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.0}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// Histograms over powers of two of ns, one bar per series in each bucket.
pub fn log2_histogram(id: &str, title: &str, series: &[(String, &[u64])]) -> Option<String> {
    let used: Vec<usize> = (0..64)
        .filter(|&i| {
            series
                .iter()
                .any(|(_, c)| c.get(i).copied().unwrap_or(0) > 0)
        })
        .collect();
    let (&lo, &hi) = (used.first()?, used.last()?);
    let ymax = series
        .iter()
        .flat_map(|(_, c)| c[lo..=hi].iter())
        .copied()
        .max()
        .unwrap_or(0) as f64;
    let mut out = String::new();
    open(&mut out, id, title);
    legend(&mut out, series.iter().map(|(n, _)| n.as_str()));
    let (ymax, step) = nice(ymax);
    y_axis(&mut out, ymax, step, "count");
    let buckets = hi - lo + 1;
    let plot_w = W - LEFT - RIGHT;
    let bw = plot_w / buckets as f64;
    let plot_h = H - TOP - BOTTOM;
    for (k, i) in (lo..=hi).enumerate() {
        let x0 = LEFT + k as f64 * bw;
        let each = (bw - 4.0) / series.len() as f64;
        for (j, ((name, counts), colour)) in series.iter().zip(COLOURS.iter().cycle()).enumerate() {
            let v = counts[i] as f64;
            if v == 0.0 {
                continue;
            }
            let h = v / ymax * plot_h;
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{colour}\"><title>{}: {} in [{}, {})</title></rect>",
                x0 + 2.0 + j as f64 * each,
                H - BOTTOM - h,
                each.max(1.0),
                esc(name),
                counts[i],
                pow2_label(i),
                pow2_label(i + 1)
            );
        }
        if buckets <= 24 || k % 2 == 0 {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                x0 + bw / 2.0,
                H - BOTTOM + 14.0,
                pow2_label(i)
            );
        }
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">duration (bucket from 2^i ns)</text></svg>",
        LEFT + plot_w / 2.0,
        H - 8.0
    );
    Some(out)
}

/// Lines over a shared x axis: each series is `(name, points)` with x in the unit named
/// by `x_label`.
pub fn lines(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Option<String> {
    let pts = || series.iter().flat_map(|(_, p)| p.iter());
    pts().next()?;
    let xmin = pts().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let ymax = pts().map(|p| p.1).fold(0.0, f64::max);
    let (ymax, step) = nice(ymax);
    let span = if xmax > xmin { xmax - xmin } else { 1.0 };
    let mut out = String::new();
    open(&mut out, id, title);
    legend(&mut out, series.iter().map(|(n, _)| n.as_str()));
    y_axis(&mut out, ymax, step, y_label);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x_of = |x: f64| LEFT + (x - xmin) / span * plot_w;
    let y_of = |y: f64| H - BOTTOM - y / ymax * plot_h;
    let (_, xstep) = nice(span);
    let mut t = (xmin / xstep).ceil() * xstep;
    while t <= xmax {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            x_of(t),
            H - BOTTOM + 14.0,
            short(t)
        );
        t += xstep;
    }
    for ((name, p), colour) in series.iter().zip(COLOURS.iter().cycle()) {
        let mut d = String::new();
        for (k, (x, y)) in p.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1} ",
                if k == 0 { "M" } else { "L" },
                x_of(*x),
                y_of(*y)
            );
        }
        let _ = write!(
            out,
            "<path class=\"line\" d=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"><title>{}</title></path>",
            d.trim_end(),
            esc(name)
        );
        for (x, y) in p.iter().filter(|(_, y)| *y > 0.0) {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{colour}\"><title>{}: {} at {}</title></circle>",
                x_of(*x),
                y_of(*y),
                esc(name),
                short(*y),
                short(*x)
            );
        }
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text></svg>",
        LEFT + plot_w / 2.0,
        H - 8.0,
        esc(x_label)
    );
    Some(out)
}

/// A directed graph on a circle: `nodes` are labels, `edges` `(from, to, label, in a
/// cycle)`; edges in a cycle are drawn red and thick.
pub fn graph(
    id: &str,
    title: &str,
    nodes: &[String],
    edges: &[(usize, usize, String, bool)],
) -> Option<String> {
    if edges.is_empty() {
        return None;
    }
    let h = 420.0;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"chart\" id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {h}\" width=\"{W}\" height=\"{h}\" role=\"img\"><title>{t}</title><rect width=\"{W}\" height=\"{h}\" fill=\"#fff\"/><text x=\"{LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{t}</text><defs><marker id=\"arrow-{}\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333\"/></marker></defs>",
        esc(id),
        esc(id),
        t = esc(title)
    );
    let (cx, cy, r) = (W / 2.0, h / 2.0 + 14.0, h / 2.0 - 60.0);
    let pos: Vec<(f64, f64)> = (0..nodes.len())
        .map(|i| {
            let a =
                std::f64::consts::TAU * i as f64 / nodes.len() as f64 - std::f64::consts::FRAC_PI_2;
            (cx + r * 1.6 * a.cos(), cy + r * a.sin())
        })
        .collect();
    for (a, b, label, hot) in edges {
        let ((x1, y1), (x2, y2)) = (pos[*a], pos[*b]);
        // Stop short of the target's box.
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ex, ey) = (x2 - dx / len * 34.0, y2 - dy / len * 20.0);
        let colour = if *hot { "#d00" } else { "#555" };
        let _ = write!(
            out,
            "<line class=\"edge\" x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{ex:.1}\" y2=\"{ey:.1}\" stroke=\"{colour}\" stroke-width=\"{}\" marker-end=\"url(#arrow-{})\"><title>{}</title></line><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{colour}\" text-anchor=\"middle\">{}</text>",
            if *hot { 3 } else { 1 },
            esc(id),
            esc(label),
            (x1 + ex) / 2.0,
            (y1 + ey) / 2.0 - 4.0,
            esc(label)
        );
    }
    for (n, (x, y)) in nodes.iter().zip(&pos) {
        let w = 10.0 + 6.5 * n.chars().count() as f64;
        let _ = write!(
            out,
            "<rect class=\"vertex\" x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"22\" rx=\"4\" fill=\"#e8f0fa\" stroke=\"#0072b2\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x - w / 2.0,
            y - 11.0,
            y + 4.0,
            esc(n)
        );
    }
    out.push_str("</svg>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_empty_charts_are_none() {
        assert_eq!(
            esc("<a href='x'>&\u{1b}"),
            "&lt;a href=&#39;x&#39;&gt;&amp;\u{fffd}"
        );
        assert!(log2_histogram("h", "t", &[("a".into(), &[0u64; 64][..])]).is_none());
        assert!(lines("l", "t", "x", "y", &[("a".into(), vec![])]).is_none());
        assert!(graph("g", "t", &["a".into()], &[]).is_none());
        let mut c = [0u64; 64];
        c[10] = 5;
        c[20] = 2;
        let h = log2_histogram("h", "<t>", &[("a<b".into(), &c[..])]).unwrap();
        assert_eq!(h.matches("class=\"bar\"").count(), 2);
        assert!(h.contains("&lt;t&gt;") && h.contains("a&lt;b") && !h.contains("<t>"));
        assert_eq!(nice(7.0), (8.0, 2.0));
        assert_eq!(nice(4.0), (4.0, 1.0));
        assert_eq!(nice(2300.0), (2500.0, 500.0));
    }
}
