//! One table model for the analysis reports: a table's columns are defined once, each with
//! its text heading and width and its HTML title, and rendered as aligned text (`glk
//! analyze`) or as a sortable HTML table (`glk report`).

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::svg::esc;

/// One cell: its text (a text cell may have several lines, HTML only), and for numbers and
/// durations the value the HTML table sorts by.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// What is shown.
    pub text: String,
    /// The sort value (`None`: sorted as text).
    pub sort: Option<f64>,
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            sort: None,
        }
    }

    /// A count.
    pub fn num(v: u64) -> Cell {
        Cell {
            text: v.to_string(),
            sort: Some(v as f64),
        }
    }

    /// A duration in nanoseconds, shown in its unit (`1.2ms`).
    pub fn dur(ns: u64) -> Cell {
        Cell {
            text: clikit::fmt::nanos(ns),
            sort: Some(ns as f64),
        }
    }
}

/// Where a column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// In the text and in the HTML table.
    Both,
    /// Only in the text.
    Text,
    /// Only in the HTML table.
    Html,
}

/// One column of a table of `T`.
pub struct Column<T> {
    /// The text heading (upper case).
    pub head: &'static str,
    /// The HTML heading.
    pub title: &'static str,
    /// The text width; 0: as wide as the cell.
    pub width: usize,
    /// Right-aligned in the text (numbers).
    pub right: bool,
    /// Spaces before it in the text (the first column has none).
    pub gap: usize,
    /// Where it shows.
    pub show: Show,
    /// The cell of a row.
    pub cell: fn(&T) -> Cell,
}

impl<T> Column<T> {
    /// A left-aligned text column shown in both renderings, one space after the previous.
    pub const fn left(
        head: &'static str,
        title: &'static str,
        width: usize,
        cell: fn(&T) -> Cell,
    ) -> Self {
        Column {
            head,
            title,
            width,
            right: false,
            gap: 1,
            show: Show::Both,
            cell,
        }
    }

    /// A right-aligned column (numbers, durations) shown in both renderings.
    pub const fn right(
        head: &'static str,
        title: &'static str,
        width: usize,
        cell: fn(&T) -> Cell,
    ) -> Self {
        Column {
            right: true,
            ..Column::left(head, title, width, cell)
        }
    }

    /// The same column with `gap` spaces before it in the text.
    pub const fn gap(self, gap: usize) -> Self {
        Column { gap, ..self }
    }

    /// The same column, shown only where `show` says.
    pub const fn only(self, show: Show) -> Self {
        Column { show, ..self }
    }

    fn in_text(&self) -> bool {
        self.show != Show::Html
    }

    fn in_html(&self) -> bool {
        self.show != Show::Text
    }

    fn pad(&self, out: &mut String, first: bool, s: &str) {
        if !first {
            out.extend(std::iter::repeat_n(' ', self.gap));
        }
        let _ = if self.right {
            write!(out, "{s:>w$}", w = self.width)
        } else {
            write!(out, "{s:<w$}", w = self.width)
        };
    }
}

/// Writes the text heading line of `cols` (without trailing spaces: a last column may have
/// no heading).
pub fn text_head<T>(out: &mut impl Write, cols: &[Column<T>]) -> io::Result<()> {
    let mut line = String::new();
    for (i, c) in cols.iter().filter(|c| c.in_text()).enumerate() {
        c.pad(&mut line, i == 0, c.head);
    }
    writeln!(out, "{}", line.trim_end())
}

/// Writes one row as a text line.
pub fn text_row<T>(out: &mut impl Write, cols: &[Column<T>], row: &T) -> io::Result<()> {
    let mut line = String::new();
    for (i, c) in cols.iter().filter(|c| c.in_text()).enumerate() {
        c.pad(&mut line, i == 0, &(c.cell)(row).text);
    }
    writeln!(out, "{line}")
}

/// Writes the heading and every row as text.
pub fn text<'a, T: 'a>(
    out: &mut impl Write,
    cols: &[Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
) -> io::Result<()> {
    text_head(out, cols)?;
    rows.into_iter().try_for_each(|r| text_row(out, cols, r))
}

/// Appends a sortable HTML table (`id` names it for `#sort=ID:COLUMN` links).
pub fn html<'a, T: 'a>(
    out: &mut String,
    id: &str,
    cols: &[Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
) {
    let cols: Vec<&Column<T>> = cols.iter().filter(|c| c.in_html()).collect();
    let _ = write!(
        out,
        "<table class=\"sortable\" id=\"{}\"><thead><tr>",
        esc(id)
    );
    for c in &cols {
        let _ = write!(out, "<th>{}</th>", esc(c.title));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for c in &cols {
            let cell = (c.cell)(r);
            match cell.sort {
                Some(v) => {
                    let _ = write!(
                        out,
                        "<td class=\"n\" data-v=\"{v}\">{}</td>",
                        esc(&cell.text)
                    );
                }
                None => {
                    // A text cell's lines stay lines.
                    let lines: Vec<String> = cell.text.split('\n').map(esc).collect();
                    let _ = write!(out, "<td>{}</td>", lines.join("<br>"));
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row(&'static str, u64);

    const COLS: [Column<Row>; 3] = [
        Column::left("NAME", "name", 6, |r| Cell::text(r.0)),
        Column::right("N", "count", 4, |r| Cell::num(r.1)),
        Column::left("NOTE", "note", 0, |r: &Row| {
            Cell::text(format!("<{}>", r.0))
        })
        .gap(2)
        .only(Show::Text),
    ];

    #[test]
    fn text_pads_and_html_escapes_and_sorts() {
        let rows = [Row("a&b", 7), Row("c", 12)];
        let mut t = Vec::new();
        text(&mut t, &COLS, &rows).unwrap();
        assert_eq!(
            String::from_utf8(t).unwrap(),
            "NAME      N  NOTE\na&b       7  <a&b>\nc        12  <c>\n"
        );
        let mut h = String::new();
        html(&mut h, "t", &COLS, &rows);
        assert!(h.contains("<th>name</th><th>count</th></tr>"), "{h}");
        assert!(
            h.contains("<td>a&amp;b</td><td class=\"n\" data-v=\"7\">7</td></tr>"),
            "{h}"
        );
        assert!(!h.contains("note"), "{h}");
    }

    #[test]
    fn a_cells_lines_stay_lines_in_html_only_escaped() {
        const LINES: [Column<Row>; 1] = [Column::left("", "who", 0, |r: &Row| {
            Cell::text(format!("held by {}\nwaiting <x>\x1b", r.0))
        })];
        let mut h = String::new();
        html(&mut h, "t", &LINES, &[Row("a&b", 1)]);
        assert!(
            h.contains("<td>held by a&amp;b<br>waiting &lt;x&gt;\u{fffd}</td>"),
            "{h}"
        );
    }
}
