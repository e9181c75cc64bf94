//! `glk report` renders: the HTML is self-contained, headless Chromium draws every chart
//! (each chart screenshotted alone must show its series' colours, not a blank box), the
//! sortable tables sort, and the findings come first. Screenshots are kept in the target
//! directory's `tmp/report-screenshots/` to look at.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

const COLOURS: [[u8; 3]; 4] = [
    [0x00, 0x72, 0xb2],
    [0xd5, 0x5e, 0x00],
    [0x00, 0x9e, 0x73],
    [0xcc, 0x79, 0xa7],
];

/// Headless Chromium for `test`, if installed; else the test is skipped, saying why.
fn chromium(test: &str) -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|c| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(c))
                .find(|p| p.is_file())
        });
    if found.is_none() {
        testdata::skip(test, "no chromium (Debian package chromium)");
    }
    found
}

fn shots_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn report(fixture: &str, out: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_glk"))
        .arg("report")
        .arg(testdata::path(fixture))
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

fn headless(chrome: &Path, args: &[&str], url: &str) -> Vec<u8> {
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// The RGB pixels of `html` as Chromium draws it in a window of `size` (`W,H`), saved
/// to `png` to look at.
fn screenshot(chrome: &Path, html: &Path, png: &Path, size: &str) -> Vec<[u8; 3]> {
    headless(
        chrome,
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={size}"),
        ],
        &format!("file://{}", html.display()),
    );
    pixels(png)
}

/// RGB pixels of a PNG.
fn pixels(path: &Path) -> Vec<[u8; 3]> {
    let dec = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect()
}

fn near(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 12)
}

/// Every `<svg class="chart" ...>...</svg>` of the page.
fn charts(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg class=\"chart\"") {
        let end = rest[i..].find("</svg>").unwrap() + i + 6;
        let svg = &rest[i..end];
        let id = svg
            .split("id=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        out.push((id, svg.to_string()));
        rest = &rest[end..];
    }
    out
}

/// A page that fetches nothing from anywhere, whose every table has as many cells in each
/// row as it has headers.
fn self_contained_with_whole_tables(fixture: &str, html: &str) {
    for bad in ["<link", " src=", "url(http", "@import", "https://"] {
        assert!(!html.contains(bad), "{fixture}: {bad}");
    }
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    for t in html.split("<table class=\"sortable\"").skip(1) {
        let t = t.split("</table>").next().unwrap();
        let (head, body) = t.split_once("</thead>").unwrap();
        let cols = head.matches("<th>").count();
        for row in body.split("<tr>").skip(1) {
            assert_eq!(row.matches("<td").count(), cols, "{fixture}: {t:.200}");
        }
    }
}

#[test]
fn the_report_renders_every_chart() {
    let Some(chrome) = chromium("the_report_renders_every_chart") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shots = shots_dir();
    for (fixture, want) in [
        (
            "real/dlmev612",
            &[
                "chart-storms",
                "chart-tdiff",
                "chart-master",
                "chart-holdwait",
                "chart-waiters",
                "chart-waitfor",
            ][..],
        ),
        (
            "real/flock-deadlock-6.12/deadlock",
            &["chart-waiters", "chart-waitfor"][..],
        ),
    ] {
        let name = fixture.replace('/', "_");
        let path = dir.path().join(format!("{name}.html"));
        let html = report(fixture, &path);
        self_contained_with_whole_tables(fixture, &html);
        // The findings come before the charts.
        assert!(html.find("id=\"findings\"").unwrap() < html.find("id=\"charts\"").unwrap());
        let found: Vec<(String, String)> = charts(&html);
        let ids: Vec<&str> = found.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(ids, want, "{fixture}");
        // The whole page, to look at.
        let page = shots.join(format!("{name}.png"));
        assert!(
            screenshot(&chrome, &path, &page, "1200,5000")
                .iter()
                .filter(|p| **p != [255, 255, 255])
                .count()
                > 50_000
        );
        // Each chart alone: its series are drawn in their colours.
        for (id, svg) in &found {
            let one = dir.path().join(format!("{name}-{id}.html"));
            std::fs::write(
                &one,
                format!("<html><body style=\"margin:0\">{svg}</body></html>"),
            )
            .unwrap();
            let png = shots.join(format!("{name}-{id}.png"));
            let px = screenshot(&chrome, &one, &png, "880,440");
            // Legend swatches: one 11x11 square per series.
            let series = svg.matches("width=\"11\" height=\"11\"").count();
            let coloured = |c: [u8; 3]| px.iter().filter(|p| near(**p, c)).count();
            let drawn: Vec<usize> = COLOURS.iter().map(|c| coloured(*c)).collect();
            if *id == "chart-waitfor" {
                // Boxes and edges; a deadlock's edges in red.
                assert!(
                    coloured([0xe8, 0xf0, 0xfa]) > 1000,
                    "{fixture} {id}: no vertices"
                );
                if fixture.contains("deadlock") {
                    assert!(
                        coloured([0xdd, 0x00, 0x00]) > 100,
                        "{fixture} {id}: no red cycle edges"
                    );
                }
            } else {
                // Every series (up to the four colours checked) is drawn beyond its legend
                // swatch (121 px), and the first one well beyond.
                assert!(series > 0, "{fixture} {id}: no legend");
                for (k, n) in drawn.iter().enumerate().take(series.min(COLOURS.len())) {
                    assert!(*n > 125, "{fixture} {id}: series {k} not drawn: {drawn:?}");
                }
                assert!(drawn[0] > 300, "{fixture} {id}: {drawn:?}");
            }
        }
    }
}

#[test]
fn tables_sort_in_the_browser() {
    let Some(chrome) = chromium("tables_sort_in_the_browser") else {
        return;
    };
    let (_dir, path) = testdata::scratch_file("r.html");
    report("real/dlmev612", &path);
    // Sort the contended table by remote demotes (column 2), ascending then descending.
    let column = |dom: &str| -> Vec<u64> {
        let t = dom.split("id=\"table-contended\"").nth(1).unwrap();
        let body = t
            .split("<tbody>")
            .nth(1)
            .unwrap()
            .split("</tbody>")
            .next()
            .unwrap();
        body.split("<tr>")
            .skip(1)
            .map(|r| {
                let cell = r.split("<td").nth(3).unwrap();
                cell.split("data-v=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    for (hash, ascending) in [
        ("#sort=table-contended:2", true),
        ("#sort=table-contended:2:desc", false),
    ] {
        let dom = String::from_utf8(headless(
            &chrome,
            &["--dump-dom", "--virtual-time-budget=2000"],
            &format!("file://{}{hash}", path.display()),
        ))
        .unwrap();
        assert!(dom.contains("sortable-ready"), "the script did not run");
        let v = column(&dom);
        assert!(v.len() > 10);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        if !ascending {
            sorted.reverse();
        }
        assert_eq!(v, sorted, "{hash}");
        // Not already in that order before sorting (the default is by demotes, descending):
        // ascending proves the click.
        if ascending {
            assert!(v.first() < v.last());
        }
    }
}

/// The contended table names who held and who waited for each glock, as `glk analyze`
/// does under each row, with each party's `H:` line, one party per line.
#[test]
fn contended_glocks_show_who_held_and_waited() {
    let (_dir, path) = testdata::scratch_file("r.html");
    let fixture = "real/flock-deadlock-6.12/deadlock";
    let html = report(fixture, &path);
    let dir = testdata::path(fixture);
    let analyzed = common::glk_json(&[
        std::ffi::OsStr::new("analyze"),
        dir.as_os_str(),
        std::ffi::OsStr::new("--json"),
    ]);
    let table = html.split("id=\"table-contended\"").nth(1).unwrap();
    let table = table.split("</table>").next().unwrap();
    assert!(table.contains("<th>held by, waiting (last snapshot with any)</th>"));
    let rows: Vec<&str> = table.split("<tr>").skip(2).collect();
    let contended = analyzed["contended"].as_array().unwrap();
    assert_eq!(rows.len(), contended.len());
    let mut named = 0;
    for (row, c) in rows.iter().zip(contended) {
        let cell = row
            .split("<td>")
            .last()
            .unwrap()
            .split("</td>")
            .next()
            .unwrap();
        let mut want = Vec::new();
        for (key, role) in [("holders", "held by"), ("waiters", "waiting")] {
            for who in common::elements(&c[key]) {
                want.push(format!("{role} {}", who.as_str().unwrap()));
            }
        }
        let cites = common::elements(&c["cites"]).map(|x| x.as_str().unwrap());
        let want: Vec<String> = want
            .iter()
            .zip(cites)
            .map(|(w, at)| escaped(&format!("{w} ({at})")))
            .collect();
        assert_eq!(cell, want.join("<br>"), "{}", c["glock"]);
        named += want.len();
    }
    assert!(named >= 4, "{named} parties");
}

/// `s` escaped as HTML text, by the five characters HTML gives a meaning.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}
