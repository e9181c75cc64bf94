//! One cluster clock: each node's trace clock mapped to wall-clock time, with the
//! uncertainty the evidence leaves.
//!
//! Two kinds of evidence, both in the traces themselves:
//! - **Markers.** `glk trace` and `glk capture` write `glkmark LABEL node=N wall=W clock=C`
//!   into the trace (the wall clock read just before the write: a lower bound of the wall
//!   time at the marker's timestamp, so offset ≥ W − ts), then `glkmark LABEL.bound ...
//!   wall=W'` (read once the write returned: offset ≤ W' − ts of the marker). Markers written
//!   by other tools (`date` into `trace_marker`) give the lower bound only. Markers assume
//!   the nodes' wall clocks agree (NTP); they say nothing about how well.
//! - **Messages.** A DLM message is received after it is sent: for a message from A to B,
//!   `recv_B + o_B ≥ send_A + o_A`, so `o_B − o_A ≥ send_A − recv_B`; messages from B to A
//!   bound it from above. With messages both ways the offset between two nodes is known to
//!   within half the shortest round trip, whatever their wall clocks say.
//!
//! Offsets are `wall clock − trace clock`, in ns. One node (the first with markers, else
//! the first) is the reference; the others are placed by messages where they have them
//! with an aligned node, by their own markers otherwise.

use serde::Serialize;

/// A `glkmark` line of one node's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The trace timestamp of the line.
    pub ts_ns: u64,
    /// The wall clock it carries (ns since the epoch).
    pub wall_ns: u64,
    /// A `.bound` marker: its wall clock was read after the previous marker's write.
    pub bound: bool,
}

impl Mark {
    /// Parses a `tracing_mark_write` / `print` body; `None` unless it is a `glkmark`.
    pub fn parse(body: &[u8]) -> Option<(Mark, Option<&[u8]>)> {
        let at = memchr::memmem::find(body, b"glkmark ")?;
        let mut words = body[at + 8..]
            .split(|&b| b == b' ')
            .filter(|w| !w.is_empty());
        let label = words.next()?;
        let (mut wall, mut clock) = (None, None);
        for w in words {
            if let Some(v) = w.strip_prefix(b"wall=") {
                wall = parse_wall(v);
            } else if let Some(v) = w.strip_prefix(b"clock=") {
                clock = Some(v.trim_ascii_end());
            }
        }
        Some((
            Mark {
                ts_ns: 0,
                wall_ns: wall?,
                bound: label.ends_with(b".bound"),
            },
            clock,
        ))
    }
}

/// `SECS.FRACTION` (up to 9 digits) as ns.
fn parse_wall(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii_end();
    let (s, f) = match memchr::memchr(b'.', v) {
        Some(d) => (&v[..d], &v[d + 1..]),
        None => (v, &b""[..]),
    };
    let secs = glockparse::num::parse_u64(s)?;
    let mut nanos = 0u64;
    for i in 0..9 {
        let d = match f.get(i) {
            Some(c) if c.is_ascii_digit() => u64::from(c - b'0'),
            Some(_) => return None,
            None => 0,
        };
        nanos = nanos * 10 + d;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// How a node's offset was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Its own markers, with upper bounds (`glk` markers).
    Markers,
    /// Its own markers, lower bounds only (markers written by other tools).
    MarkersLowerBound,
    /// DLM messages exchanged with an aligned node (the reference's offset plus the
    /// message bounds).
    Messages,
    /// No node has markers: this node's trace clock is the cluster clock (offsets are
    /// relative to it, not to wall-clock time).
    Reference,
    /// Nothing to align it with: its events are not compared with other nodes'.
    None,
}

impl Method {
    /// The name the JSON uses (`markers`, `messages`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Markers => "markers",
            Method::MarkersLowerBound => "markers_lower_bound",
            Method::Messages => "messages",
            Method::Reference => "reference",
            Method::None => "none",
        }
    }
}

/// One node's place on the cluster clock.
#[derive(Debug, Clone, Serialize)]
pub struct Alignment {
    /// The node.
    pub node: String,
    /// Wall clock minus the node's trace clock, ns (`null`: unknown). When no node has
    /// markers, offsets are relative to the reference node's trace clock.
    pub offset_ns: Option<i64>,
    /// Half-width of the interval the offset is known within, ns.
    pub uncertainty_ns: Option<u64>,
    /// Half-width of the interval its offset is known within relative to the reference
    /// node's (what ordering its events against other nodes' depends on), ns.
    pub relative_uncertainty_ns: Option<u64>,
    /// How it was aligned.
    pub method: Method,
    /// The node it was aligned with (messages), or itself.
    pub reference: String,
    /// The trace clock, as the start marker names it (`local`, `global`, ...).
    pub trace_clock: Option<String>,
    /// Markers read (lower bounds; upper bounds).
    pub markers: (usize, usize),
    /// Messages matched with the reference node, each way (to it; from it).
    pub messages: (usize, usize),
    /// Where the node's own markers put it, minus where the messages put it (ns): how
    /// far its wall clock is from the reference's, as far as the evidence can tell.
    pub wall_clock_disagreement_ns: Option<i64>,
    /// In a cluster capture: its wall clock minus the gathering node's, bounded by the ssh
    /// round trip (`[least, most]`, seconds; `cluster.json`), independent evidence to set
    /// beside what markers and messages say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_wall_offset_s: Option<[f64; 2]>,
    /// The node that gathered that cluster capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_reference: Option<String>,
}

impl Alignment {
    /// How far apart this node's and `other`'s aligned clocks may be, ns.
    pub fn between(&self, other: &Alignment) -> u64 {
        self.relative_uncertainty_ns.unwrap_or(0) + other.relative_uncertainty_ns.unwrap_or(0)
    }

    /// Aligned time (ns) of a trace timestamp, when the node is aligned.
    pub fn at(&self, ts_ns: u64) -> Option<i64> {
        self.offset_ns.map(|o| ts_ns as i64 + o)
    }
}

/// An interval `[lo, hi]` of offsets.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    lo: i64,
    hi: i64,
}

impl Span {
    fn mid(self) -> i64 {
        self.lo + (self.hi - self.lo) / 2
    }

    fn half(self) -> u64 {
        ((self.hi - self.lo) / 2).unsigned_abs()
    }
}

/// What the markers of one node say: the interval of offsets, and whether it has upper bounds.
fn from_marks(marks: &[Mark]) -> Option<(Span, bool)> {
    let mut lower: Vec<i64> = Vec::new();
    let mut upper: Vec<i64> = Vec::new();
    let mut last_ts = None;
    for m in marks {
        let off = m.wall_ns as i64 - m.ts_ns as i64;
        if m.bound {
            // Bounds the marker just before it: its write had returned when this wall
            // clock was read.
            if let Some(ts) = last_ts {
                upper.push(m.wall_ns as i64 - ts as i64);
            }
        } else {
            lower.push(off);
            last_ts = Some(m.ts_ns);
        }
    }
    let lo = *lower.iter().max()?;
    match upper.iter().min() {
        Some(&hi) if hi >= lo => Some((Span { lo, hi }, true)),
        // Bounds that contradict each other (a wall clock stepped during the trace):
        // everything the markers said.
        Some(_) => {
            let all = lower.iter().chain(&upper);
            Some((
                Span {
                    lo: *all.clone().min()?,
                    hi: *all.max()?,
                },
                true,
            ))
        }
        // Lower bounds only: the best one, as uncertain as the markers' spread.
        None => Some((
            Span {
                lo,
                hi: lo + (lo - lower.iter().min()?),
            },
            false,
        )),
    }
}

/// One node's clock evidence.
pub struct NodeClock<'a> {
    /// The node.
    pub node: &'a str,
    /// Its `glkmark` markers.
    pub marks: &'a [Mark],
    /// The trace clock the capture recorded.
    pub trace_clock: Option<&'a str>,
}

/// The message bounds between nodes `a` and `b`: `o_b − o_a ∈ [lo, hi]` where known
/// (`lo` from messages a→b, `hi` from b→a), with the counts each way.
#[derive(Debug, Clone, Copy, Default)]
pub struct PairBounds {
    /// The lower bound, when a message a→b gives one.
    pub lo: Option<i64>,
    /// The upper bound, when a message b→a gives one.
    pub hi: Option<i64>,
    /// Messages a→b.
    pub a_to_b: usize,
    /// Messages b→a.
    pub b_to_a: usize,
}

impl PairBounds {
    /// Adds a message sent by `a` at `sent` and received by `b` at `recv`.
    pub fn a_to_b(&mut self, sent: u64, recv: u64) {
        let v = sent as i64 - recv as i64;
        self.lo = Some(self.lo.map_or(v, |x| x.max(v)));
        self.a_to_b += 1;
    }

    /// Adds a message sent by `b` at `sent` and received by `a` at `recv`.
    pub fn b_to_a(&mut self, sent: u64, recv: u64) {
        let v = recv as i64 - sent as i64;
        self.hi = Some(self.hi.map_or(v, |x| x.min(v)));
        self.b_to_a += 1;
    }

    fn span(&self) -> Option<Span> {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) if lo <= hi => Some(Span { lo, hi }),
            _ => None,
        }
    }
}

/// Aligns every node. `pairs(a, b)` gives the message bounds between nodes `a` and `b`
/// (indexes into `nodes`, `a < b`).
pub fn align(
    nodes: &[NodeClock<'_>],
    pairs: &dyn Fn(usize, usize) -> PairBounds,
) -> Vec<Alignment> {
    let marks: Vec<Option<(Span, bool)>> = nodes.iter().map(|n| from_marks(n.marks)).collect();
    let reference = marks.iter().position(Option::is_some).unwrap_or(0);
    let mut out: Vec<Alignment> = nodes
        .iter()
        .zip(&marks)
        .map(|(n, m)| {
            let lower = n.marks.iter().filter(|m| !m.bound).count();
            let (offset_ns, uncertainty_ns, method) = match m {
                Some((s, true)) => (Some(s.mid()), Some(s.half()), Method::Markers),
                // The best lower bound is the estimate; the spread its uncertainty.
                Some((s, false)) => (Some(s.lo), Some(s.half() * 2), Method::MarkersLowerBound),
                None => (None, None, Method::None),
            };
            Alignment {
                node: n.node.to_string(),
                offset_ns,
                uncertainty_ns,
                relative_uncertainty_ns: uncertainty_ns,
                method,
                reference: n.node.to_string(),
                trace_clock: n.trace_clock.map(str::to_string),
                markers: (lower, n.marks.len() - lower),
                messages: (0, 0),
                wall_clock_disagreement_ns: None,
                ssh_wall_offset_s: None,
                ssh_reference: None,
            }
        })
        .collect();
    if nodes.is_empty() {
        return out;
    }
    if marks[reference].is_none() {
        // No markers anywhere: the reference's own trace clock is the cluster clock.
        out[reference].offset_ns = Some(0);
        out[reference].uncertainty_ns = Some(0);
        out[reference].method = Method::Reference;
    }
    out[reference].relative_uncertainty_ns = Some(0);
    // Nodes placed by messages, outward from the reference, each from the aligned node
    // whose messages bound it most tightly.
    let mut placed = vec![false; nodes.len()];
    placed[reference] = true;
    loop {
        let mut best: Option<(usize, usize, Span, PairBounds)> = None;
        for a in (0..nodes.len()).filter(|&a| placed[a]) {
            for b in (0..nodes.len()).filter(|&b| !placed[b]) {
                let (bounds, flip) = if a < b {
                    (pairs(a, b), false)
                } else {
                    (pairs(b, a), true)
                };
                let Some(s) = bounds.span() else { continue };
                // o_b − o_a, whichever way the pair was asked.
                let s = if flip {
                    Span {
                        lo: -s.hi,
                        hi: -s.lo,
                    }
                } else {
                    s
                };
                if best.as_ref().is_none_or(|(_, _, x, _)| s.half() < x.half()) {
                    best = Some((a, b, s, bounds));
                }
            }
        }
        let Some((a, b, s, bounds)) = best else { break };
        let (Some(oa), Some(ua), Some(ra)) = (
            out[a].offset_ns,
            out[a].uncertainty_ns,
            out[a].relative_uncertainty_ns,
        ) else {
            break;
        };
        let offset = oa + s.mid();
        let own = out[b].offset_ns;
        out[b].wall_clock_disagreement_ns = own.map(|o| o - offset);
        out[b].offset_ns = Some(offset);
        out[b].uncertainty_ns = Some(ua + s.half());
        out[b].relative_uncertainty_ns = Some(ra + s.half());
        out[b].method = Method::Messages;
        out[b].reference = out[a].node.clone();
        out[b].messages = if a < b {
            (bounds.b_to_a, bounds.a_to_b)
        } else {
            (bounds.a_to_b, bounds.b_to_a)
        };
        placed[b] = true;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(ts: u64, wall: u64, bound: bool) -> Mark {
        Mark {
            ts_ns: ts,
            wall_ns: wall,
            bound,
        }
    }

    #[test]
    fn method_names_are_the_json_names() {
        for m in [
            Method::Markers,
            Method::MarkersLowerBound,
            Method::Messages,
            Method::Reference,
            Method::None,
        ] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
    }

    #[test]
    fn markers_parse() {
        let (m, clock) =
            Mark::parse(b"glkmark start node=n1 wall=1795349122.162984497 clock=local").unwrap();
        assert_eq!(
            (m.wall_ns, m.bound, clock),
            (1_795_349_122_162_984_497, false, Some(&b"local"[..]))
        );
        let (m, _) = Mark::parse(b"glkmark end.bound node=n1 wall=12.5\n").unwrap();
        assert_eq!((m.wall_ns, m.bound), (12_500_000_000, true));
        assert!(Mark::parse(b"glkmark start node=n1").is_none());
        assert!(Mark::parse(b"something else wall=1").is_none());
    }

    #[test]
    fn alignment_from_markers_and_message_bounds() {
        let n1 = [
            mark(1_000, 10_000_900, false),
            mark(1_000, 10_001_100, true),
        ];
        let n2 = [mark(5_000, 20_004_000, false)];
        let nodes = [
            NodeClock {
                node: "n1",
                marks: &n1,
                trace_clock: Some("local"),
            },
            NodeClock {
                node: "n2",
                marks: &n2,
                trace_clock: None,
            },
        ];
        let a = align(&nodes, &|_, _| PairBounds::default());
        // n1: offset in [9_999_900, 10_000_100].
        assert_eq!(
            (a[0].offset_ns, a[0].uncertainty_ns, a[0].method),
            (Some(10_000_000), Some(100), Method::Markers)
        );
        assert_eq!(a[1].method, Method::MarkersLowerBound);
        // Messages both ways: o2 − o1 within [4_999_000, 5_001_000].
        let b = align(&nodes, &|_, _| PairBounds {
            lo: Some(4_999_000),
            hi: Some(5_001_000),
            a_to_b: 3,
            b_to_a: 2,
        });
        assert_eq!(b[1].method, Method::Messages);
        assert_eq!(b[1].offset_ns, Some(15_000_000));
        assert_eq!(b[1].uncertainty_ns, Some(100 + 1_000));
        assert_eq!(b[1].relative_uncertainty_ns, Some(1_000));
        assert_eq!(b[0].between(&b[1]), 1_000);
        assert_eq!(b[1].messages, (2, 3));
        assert_eq!(
            b[1].wall_clock_disagreement_ns,
            Some(20_004_000 - 5_000 - 15_000_000)
        );
        // Bounds one way only place nothing.
        let c = align(&nodes, &|_, _| PairBounds {
            lo: Some(1),
            hi: None,
            a_to_b: 1,
            b_to_a: 0,
        });
        assert_eq!(c[1].method, Method::MarkersLowerBound);
        // No markers at all: relative to the first node's trace clock.
        let bare = [
            NodeClock {
                node: "n1",
                marks: &[],
                trace_clock: None,
            },
            NodeClock {
                node: "n2",
                marks: &[],
                trace_clock: None,
            },
        ];
        let d = align(&bare, &|_, _| PairBounds {
            lo: Some(-10),
            hi: Some(30),
            a_to_b: 1,
            b_to_a: 1,
        });
        assert_eq!(
            (d[0].offset_ns, d[1].offset_ns, d[1].uncertainty_ns),
            (Some(0), Some(10), Some(20))
        );
        assert_eq!(
            (d[0].method, d[1].method),
            (Method::Reference, Method::Messages)
        );
    }
}
