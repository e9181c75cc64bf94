//! The exposition formats: metric families as Prometheus text format 0.0.4 or OpenMetrics
//! 1.0, chosen by the scraper's `Accept` header.
//!
//! A counter family is named without its `_total` suffix; each format adds it where that
//! format wants it (0.0.4: in `# HELP`/`# TYPE` and on the samples; OpenMetrics: only on
//! the samples).

use std::fmt::Write;

/// What a family's samples are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (resets when the process or the counted thing starts again).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Cumulative buckets (`le`), a sum and a count.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One sample: its name suffix (`_bucket`, `_sum`, `_count` for histograms, empty
/// otherwise), labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Added to the family name (counters get `_total` from the format instead).
    pub suffix: &'static str,
    /// Label names and values, in order.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
}

/// A metric family: a name, help text, a kind and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The name (a counter's without `_total`).
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// The samples.
    pub samples: Vec<Sample>,
}

impl Family {
    /// A family with no samples yet.
    pub fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    /// Adds a sample with `labels`.
    pub fn add(&mut self, labels: &[(&'static str, &str)], value: f64) {
        self.add_suffixed("", labels, value);
    }

    /// Adds a sample whose name has `suffix` (a histogram's `_bucket`, `_sum`, `_count`).
    pub fn add_suffixed(
        &mut self,
        suffix: &'static str,
        labels: &[(&'static str, &str)],
        value: f64,
    ) {
        self.samples.push(Sample {
            suffix,
            labels: labels.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            value,
        });
    }

    /// Adds this family's samples to `self` (same name and kind).
    pub fn extend(&mut self, o: Family) {
        debug_assert_eq!((self.name, self.kind), (o.name, o.kind));
        self.samples.extend(o.samples);
    }
}

/// The two formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics 1.0.0.
    OpenMetrics,
}

impl Format {
    /// The format a request's `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` with a non-zero quality at least that of any text
    /// format, else text 0.0.4.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let (mut om, mut text) = (0.0f64, 0.0f64);
        for part in accept.split(',') {
            let mut params = part.split(';').map(str::trim);
            let media = params.next().unwrap_or("").to_ascii_lowercase();
            let q = params
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                "application/openmetrics-text" => om = om.max(q),
                "text/plain" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if om > 0.0 && om >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Writes a value as both formats read it.
fn value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v}");
    }
}

/// Escapes a label value: backslash, double quote and newline.
fn label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Escapes help text: backslash and newline (and, for OpenMetrics, double quote).
fn help_text(out: &mut String, h: &str, format: Format) {
    for c in h.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if format == Format::OpenMetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
}

/// Encodes `families` in `format`. Families with no samples are left out.
pub fn encode(families: &[Family], format: Format) -> String {
    let mut out = String::with_capacity(64 * 1024);
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let counter_suffix = if f.kind == Kind::Counter {
            "_total"
        } else {
            ""
        };
        let meta_suffix = match format {
            Format::Text => counter_suffix,
            Format::OpenMetrics => "",
        };
        let _ = write!(out, "# HELP {}{meta_suffix} ", f.name);
        help_text(&mut out, f.help, format);
        let _ = writeln!(out, "\n# TYPE {}{meta_suffix} {}", f.name, f.kind.as_str());
        for s in &f.samples {
            out.push_str(f.name);
            out.push_str(s.suffix);
            out.push_str(counter_suffix);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(k);
                    out.push_str("=\"");
                    label_value(&mut out, v);
                    out.push('"');
                }
                out.push('}');
            }
            out.push(' ');
            value(&mut out, s.value);
            out.push('\n');
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Family> {
        let mut c = Family::new("gfs2_x_requests", Kind::Counter, "DLM \"requests\"\\ made");
        c.add(&[("fs", "lab:gfs"), ("type", "inode")], 12.0);
        let mut g = Family::new("gfs2_y", Kind::Gauge, "A gauge");
        g.add(&[("fs", "a\"b\\c\nd")], 0.25);
        g.add(&[], f64::NAN);
        let empty = Family::new("gfs2_empty", Kind::Gauge, "never shown");
        vec![c, g, empty]
    }

    #[test]
    fn text_0_0_4_names_counters_with_total_and_escapes() {
        let t = encode(&sample(), Format::Text);
        assert_eq!(
            t,
            "# HELP gfs2_x_requests_total DLM \"requests\"\\\\ made\n\
             # TYPE gfs2_x_requests_total counter\n\
             gfs2_x_requests_total{fs=\"lab:gfs\",type=\"inode\"} 12\n\
             # HELP gfs2_y A gauge\n\
             # TYPE gfs2_y gauge\n\
             gfs2_y{fs=\"a\\\"b\\\\c\\nd\"} 0.25\n\
             gfs2_y NaN\n"
        );
    }

    #[test]
    fn openmetrics_types_counters_without_total_and_ends_with_eof() {
        let t = encode(&sample(), Format::OpenMetrics);
        assert!(t.starts_with(
            "# HELP gfs2_x_requests DLM \\\"requests\\\"\\\\ made\n# TYPE gfs2_x_requests counter\n\
             gfs2_x_requests_total{"
        ));
        assert!(t.ends_with("gfs2_y NaN\n# EOF\n"));
    }

    #[test]
    fn accept_chooses_the_format() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                    version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(
            Format::negotiate(Some("text/plain, application/openmetrics-text;q=0.3")),
            Format::Text
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0")),
            Format::Text
        );
    }
}
