//! `glk exporter` end to end: its metrics against counts made independently from the raw
//! files of a real capture, checked by promtool and scraped by a real Prometheus (plain, and
//! over TLS with basic auth), its HTTP limits, its failures on bad and stuck input, and the
//! alert rules, dashboard and systemd unit shipped with it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GLK: &str = env!("CARGO_BIN_EXE_glk");
/// The capture: node n2 of the two-node 6.1 lab, snapshot 4, while its process waited for
/// a flock node n1 held (the DLM dump shows the request 12.7 s in the master's queue).
const NODE: &str = "real/dlm2-6.1/n2";
const SNAP: u32 = 4;

/// A debugfs-shaped tree of the capture's files (`gfs2/lab:gfs/…`, `dlm/gfs_locks`), a
/// sysfs-shaped one, and a `bin` with a fake `corosync-quorumtool` saying `quorate`.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new(quorate: &str) -> Tree {
        let (dir, fs) = testdata::scratch_file("debugfs/gfs2/lab:gfs");
        std::fs::create_dir_all(&fs).unwrap();
        std::fs::create_dir_all(dir.path().join("debugfs/dlm")).unwrap();
        for k in ["glocks", "glstats", "sbstats", "glockfd"] {
            std::fs::copy(testdata::path(&format!("{NODE}/{k}.{SNAP}")), fs.join(k)).unwrap();
        }
        std::fs::copy(
            testdata::path(&format!("{NODE}/dlm_locks.{SNAP}")),
            dir.path().join("debugfs/dlm/gfs_locks"),
        )
        .unwrap();
        let sys = dir.path().join("sys/fs/gfs2/lab:gfs/lock_module");
        std::fs::create_dir_all(&sys).unwrap();
        std::fs::write(sys.join("../withdraw"), "0\n").unwrap();
        std::fs::write(sys.join("../frozen"), "0\n").unwrap();
        std::fs::write(sys.join("block"), "0\n").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = bin.join("corosync-quorumtool");
        std::fs::write(
            &tool,
            format!("#!/bin/sh\necho 'Quorum information'\necho 'Quorate:          {quorate}'\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        Tree { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `glk exporter` on this tree with `args`.
    fn exporter(&self, args: &[&str]) -> Command {
        let mut c = Command::new(GLK);
        c.arg("exporter")
            .arg("--debugfs")
            .arg(self.path("debugfs"))
            .arg("--sysfs")
            .arg(self.path("sys"))
            .args(args)
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.path("bin").display()),
            );
        c
    }

    /// `glk exporter --once` on this tree: its output and stderr.
    fn once(&self, args: &[&str]) -> (String, String) {
        let o = self.exporter(&["--once"]).args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }
}

/// The samples of a text exposition: `name{labels}` (labels as written) to value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// The glock type names glk (and glocktop) give each type number.
fn type_name(n: &str) -> &'static str {
    match n {
        "1" => "trans",
        "2" => "inode",
        "3" => "rgrp",
        "4" => "meta",
        "5" => "iopen",
        "6" => "flock",
        "7" => "plock",
        "8" => "quota",
        "9" => "journal",
        _ => panic!("type {n}"),
    }
}

/// What the raw files hold, counted here without glk's parsers.
struct Counts {
    /// (type, state) → glocks.
    glocks: BTreeMap<(String, String), u64>,
    /// type → granted holders, waiting holders.
    holders: BTreeMap<String, (u64, u64)>,
    /// (status, local|remote) → DLM locks.
    dlm: BTreeMap<(String, String), u64>,
    /// type → DLM requests summed over CPUs.
    requests: BTreeMap<String, u64>,
}

fn count_raw() -> Counts {
    let mut c = Counts {
        glocks: BTreeMap::new(),
        holders: BTreeMap::new(),
        dlm: BTreeMap::new(),
        requests: BTreeMap::new(),
    };
    let mut ty = String::new();
    for l in testdata::text(&format!("{NODE}/glocks.{SNAP}")).lines() {
        let field = |k: &str| {
            l.split_whitespace()
                .find_map(|f| f.strip_prefix(k))
                .unwrap_or_else(|| panic!("no {k} in {l:?}"))
                .to_string()
        };
        if l.starts_with("G:") {
            ty = type_name(field("n:").split('/').next().unwrap()).to_string();
            *c.glocks.entry((ty.clone(), field("s:"))).or_default() += 1;
        } else if l.starts_with(" H:") {
            let f = field("f:");
            let e = c.holders.entry(ty.clone()).or_default();
            e.0 += u64::from(f.contains('H'));
            e.1 += u64::from(f.contains('W'));
        }
    }
    for l in testdata::text(&format!("{NODE}/dlm_locks.{SNAP}"))
        .lines()
        .skip(1)
    {
        let cols: Vec<&str> = l.split_whitespace().collect();
        let status = match cols[7] {
            "1" => "waiting",
            "2" => "granted",
            "3" => "converting",
            s => panic!("status {s}"),
        };
        let master = if cols[11] == "0" { "local" } else { "remote" };
        *c.dlm.entry((status.into(), master.into())).or_default() += 1;
    }
    for l in testdata::text(&format!("{NODE}/sbstats.{SNAP}")).lines() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.get(1) == Some(&"dlm:") {
            let name = if cols[0] == "nondisk" {
                "trans"
            } else {
                cols[0]
            };
            let sum: u64 = cols[2..].iter().map(|v| v.parse::<u64>().unwrap()).sum();
            c.requests.insert(name.to_string(), sum);
        }
    }
    c
}

/// Every metric of the exposition equals the count made from the raw files.
fn check_against_raw(m: &BTreeMap<String, f64>, raw: &Counts) {
    let get = |k: &str| *m.get(k).unwrap_or_else(|| panic!("no sample {k}"));
    let mut glocks = 0.0;
    for ((ty, state), n) in &raw.glocks {
        let k = format!("gfs2_glocks{{fs=\"lab:gfs\",type=\"{ty}\",state=\"{state}\"}}");
        assert_eq!(get(&k), *n as f64, "{k}");
        glocks += *n as f64;
    }
    let all: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("gfs2_glocks{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(all, glocks, "no glock counted twice or left out");
    for (ty, (granted, waiting)) in &raw.holders {
        let l = format!("{{fs=\"lab:gfs\",type=\"{ty}\"}}");
        assert_eq!(
            get(&format!("gfs2_glock_holders{l}")),
            *granted as f64,
            "{ty}"
        );
        assert_eq!(
            get(&format!("gfs2_glock_waiters{l}")),
            *waiting as f64,
            "{ty}"
        );
    }
    for ((status, master), n) in &raw.dlm {
        let k = format!("dlm_locks{{lockspace=\"gfs\",queue=\"{status}\",master=\"{master}\"}}");
        assert_eq!(get(&k), *n as f64, "{k}");
    }
    for (ty, n) in &raw.requests {
        let k = format!("gfs2_dlm_requests_total{{fs=\"lab:gfs\",type=\"{ty}\"}}");
        assert_eq!(get(&k), *n as f64, "{k}");
    }
}

/// Runs `promtool ARGS` with `stdin`; None when promtool is not installed.
fn promtool(args: &[&str], stdin: &str, dir: &Path) -> Option<(bool, String)> {
    let mut c = match Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(_) => return None,
    };
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    Some((o.status.success(), text))
}

#[test]
fn metrics_are_the_counts_of_the_raw_files_and_pass_promtool() {
    let t = Tree::new("Yes");
    let (text, stderr) = t.once(&["--stuck-after", "10"]);
    assert!(stderr.is_empty(), "{stderr}");
    let m = samples(&text);
    check_against_raw(&m, &count_raw());
    // The flock request has waited 12.7 s in the DLM: past 10 s, stuck, by the DLM's clock.
    assert_eq!(
        m["gfs2_glock_oldest_wait_seconds{fs=\"lab:gfs\"}"],
        12.706292
    );
    assert_eq!(
        m["dlm_lock_oldest_wait_seconds{lockspace=\"gfs\"}"],
        12.706292
    );
    assert_eq!(m["gfs2_glock_stuck_waiters{fs=\"lab:gfs\"}"], 1.0);
    assert_eq!(
        m["glk_findings{code=\"GLK-STUCK-WAITER\",severity=\"error\"}"],
        1.0
    );
    assert_eq!(
        m["glk_findings{code=\"GLK-WITHDRAWN\",severity=\"critical\"}"],
        0.0
    );
    assert_eq!(
        m["glk_findings{code=\"GLK-NO-QUORUM\",severity=\"critical\"}"],
        0.0
    );
    assert_eq!(m["corosync_quorate"], 1.0);
    assert_eq!(m["gfs2_filesystem_withdrawn{fs=\"lab:gfs\"}"], 0.0);
    for c in ["glocks", "sbstats", "sysfs", "quorum"] {
        let k = format!("glk_exporter_collector_success{{collector=\"{c}\"}}");
        assert_eq!(m[&k], 1.0, "{k}");
    }
    // Below the threshold, not stuck; the default threshold is glk doctor's.
    let (text, _) = t.once(&[]);
    let m = samples(&text);
    assert_eq!(m["gfs2_glock_stuck_waiters{fs=\"lab:gfs\"}"], 0.0);
    assert_eq!(
        m["glk_findings{code=\"GLK-STUCK-WAITER\",severity=\"error\"}"],
        0.0
    );
    match promtool(&["check", "metrics"], &text, t.dir.path()) {
        Some((ok, out)) => assert!(ok && out.trim().is_empty(), "promtool: {out}"),
        None => testdata::skip(
            "metrics_pass_promtool",
            "promtool is not installed (apt-get install prometheus)",
        ),
    }
}

#[test]
fn the_stuck_rule_is_glk_doctors() {
    // The same snapshot as a one-snapshot capture: glk doctor finds the same stuck waiter.
    let t = Tree::new("Yes");
    let cap = t.path("capture/n2");
    std::fs::create_dir_all(&cap).unwrap();
    for k in ["glocks", "dlm_locks", "time"] {
        std::fs::copy(
            testdata::path(&format!("{NODE}/{k}.{SNAP}")),
            cap.join(format!("{k}.0")),
        )
        .unwrap();
    }
    for secs in ["10", "12", "13", "30"] {
        let (text, _) = t.once(&["--stuck-after", secs]);
        let exported = samples(&text)["glk_findings{code=\"GLK-STUCK-WAITER\",severity=\"error\"}"];
        let o = Command::new(GLK)
            .args(["doctor", "--json", "--stuck-after", secs])
            .arg(t.path("capture"))
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        let doctor = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == "GLK-STUCK-WAITER")
            .count();
        assert_eq!(exported, doctor as f64, "--stuck-after {secs}: {v}");
    }
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `glk exporter` on `port` and waits until it answers.
fn serve(t: &Tree, port: u16, args: &[&str]) -> Running {
    let addr = format!("127.0.0.1:{port}");
    let child = t
        .exporter(&["--web.listen-address", &addr])
        .args(args)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let r = Running(child);
    let due = Instant::now() + Duration::from_secs(20);
    // A whole exchange (answered, or refused by TLS), so that the probe's connection is
    // over when the test starts.
    let probe = || {
        TcpStream::connect(&addr).is_ok_and(|mut s| {
            let _ = s.write_all(b"GET / HTTP/1.1\r\n\r\n");
            let _ = s.read_to_end(&mut Vec::new());
            true
        })
    };
    while !probe() {
        assert!(
            Instant::now() < due,
            "glk exporter does not answer on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    r
}

/// Sends `request` (raw bytes) to `port`; the status code, head and body.
fn http(port: u16, request: &[u8]) -> (u16, String, String) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new(), String::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (code, head.to_string(), body)
}

/// The body of a chunked response (how Prometheus sends larger answers).
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn get(port: u16, path: &str, headers: &str) -> (u16, String, String) {
    http(
        port,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n").as_bytes(),
    )
}

#[test]
fn http_serves_metrics_and_nothing_else() {
    let t = Tree::new("Yes");
    let port = free_port();
    let _e = serve(&t, port, &["--web.max-connections", "2"]);
    let (code, head, body) = get(port, "/metrics", "");
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    check_against_raw(&samples(&body), &count_raw());
    let (code, head, body) = get(
        port,
        "/metrics",
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n",
    );
    assert_eq!(code, 200);
    assert!(
        head.contains("application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"));
    assert!(body.contains("# TYPE gfs2_dlm_requests counter\n"));
    let (code, _, body) = get(port, "/", "");
    assert_eq!(code, 200);
    assert!(body.contains("<a href=\"/metrics\">"), "{body}");
    assert_eq!(get(port, "/debug", "").0, 404);
    let (code, head, _) = http(port, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(code, 405);
    assert!(head.contains("Allow: GET, HEAD"));
    let (code, head, body) = http(port, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!((code, body.as_str()), (200, ""), "{head}");
    let big = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(9000));
    assert_eq!(http(port, big.as_bytes()).0, 431);
    assert_eq!(http(port, b"GET /metrics\r\n\r\n").0, 400);
    // Two idle connections hold both places: a third is answered 503 at once.
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(port, "/metrics", "").0, 503);
    drop(idle);
    std::thread::sleep(Duration::from_millis(200));
    let (code, _, body) = get(port, "/metrics", "");
    assert_eq!(code, 200);
    let m = samples(&body);
    assert_eq!(m["glk_exporter_http_connections_rejected_total"], 1.0);
    assert!(m["glk_exporter_http_responses_total{code=\"404\"}"] >= 1.0);
}

#[test]
fn bad_and_stuck_input_fail_their_collector_only() {
    let t = Tree::new("No");
    let glocks = t.path("debugfs/gfs2/lab:gfs/glocks");
    std::fs::write(&glocks, "garbage\n\u{1}\u{2}\n").unwrap();
    let (text, stderr) = t.once(&[]);
    let m = samples(&text);
    assert_eq!(
        m["glk_exporter_collector_success{collector=\"glocks\"}"],
        0.0
    );
    assert_eq!(
        m["glk_exporter_collector_success{collector=\"sbstats\"}"],
        1.0
    );
    assert!(
        stderr.contains("collector glocks failed") && stderr.contains("glocks"),
        "{stderr}"
    );
    assert!(
        !text.contains("gfs2_glocks{"),
        "no glocks metrics from a failed read"
    );
    // Its finding codes are left out, not reported as 0; the others are judged.
    assert!(!text.contains("GLK-STUCK-WAITER"));
    assert_eq!(
        m["glk_findings{code=\"GLK-NO-QUORUM\",severity=\"critical\"}"],
        1.0
    );
    assert_eq!(m["corosync_quorate"], 0.0);

    // A glocks file cut in the middle of a glock's line: the rest is read, the cut
    // counted.
    let whole = testdata::text(&format!("{NODE}/glocks.{SNAP}"));
    let cut = whole[whole.len() / 2..].find("G:").unwrap() + whole.len() / 2 + 9;
    std::fs::write(&glocks, &whole[..cut]).unwrap();
    let (text, _) = t.once(&[]);
    let m = samples(&text);
    assert_eq!(
        m["glk_exporter_collector_success{collector=\"glocks\"}"],
        1.0
    );
    assert!(m["glk_exporter_malformed_lines_total{collector=\"glocks\"}"] >= 1.0);

    // A read that never ends (a FIFO nobody writes: as a debugfs read stuck in the
    // kernel): the collector fails at its deadline, the rest is served.
    testdata::fifo_at(&glocks);
    let start = Instant::now();
    let (text, stderr) = t.once(&["--collector.timeout", "1"]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let m = samples(&text);
    assert_eq!(
        m["glk_exporter_collector_success{collector=\"glocks\"}"],
        0.0
    );
    assert_eq!(
        m["glk_exporter_collector_success{collector=\"sysfs\"}"],
        1.0
    );
    assert!(stderr.contains("no answer within 1.0 s"), "{stderr}");

    // The filesystem gone (unmounted): nothing to report, nothing failed.
    std::fs::remove_dir_all(t.path("debugfs/gfs2/lab:gfs")).unwrap();
    let (text, _) = t.once(&[]);
    let m = samples(&text);
    assert_eq!(
        m["glk_exporter_collector_success{collector=\"glocks\"}"],
        1.0
    );
    assert!(!text.contains("gfs2_glocks{"));
}

/// Asks Prometheus' HTTP API for `query`: the result's vector, as (labels, value).
fn query(port: u16, q: &str) -> Vec<(serde_json::Value, f64)> {
    let enc: String = q
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let (code, _, body) = get(port, &format!("/api/v1/query?query={enc}"), "");
    if code != 200 {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|x| {
                    (
                        x["metric"].clone(),
                        x["value"][1].as_str().unwrap().parse().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `q` has a result in Prometheus.
fn wait_for(port: u16, q: &str) -> Vec<(serde_json::Value, f64)> {
    let due = Instant::now() + Duration::from_secs(90);
    loop {
        let r = query(port, q);
        if !r.is_empty() {
            return r;
        }
        assert!(Instant::now() < due, "Prometheus has no {q} after 90 s");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A self-signed certificate for 127.0.0.1 (openssl), its key, and the web config file
/// naming them with a user `glk` whose password is `secret`.
fn tls_config(dir: &Path) -> Option<PathBuf> {
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=glk-test"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-keyout", "key.pem", "-out", "cert.pem"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    let hash = bcrypt::hash("secret", 6).unwrap();
    let cfg = dir.join("web.yml");
    std::fs::write(
        &cfg,
        format!(
            "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  glk: {hash}\n"
        ),
    )
    .unwrap();
    Some(cfg)
}

/// Prometheus on port `prom` over `t`, scraping the plain exporter on `plain` and the TLS
/// one on `tls` with the right and a wrong password (its configuration checked by promtool).
fn prometheus(t: &Tree, prom: u16, plain: u16, tls: u16) -> Running {
    let ca = t.path("cert.pem");
    std::fs::write(
        t.path("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n\
             - job_name: glk\n  static_configs: [{{targets: ['127.0.0.1:{plain}']}}]\n\
             - job_name: glk-tls\n  scheme: https\n  tls_config: {{ca_file: '{ca}'}}\n\
             \x20 basic_auth: {{username: glk, password: secret}}\n\
             \x20 static_configs: [{{targets: ['127.0.0.1:{tls}']}}]\n\
             - job_name: glk-wrong-password\n  scheme: https\n  tls_config: {{ca_file: '{ca}'}}\n\
             \x20 basic_auth: {{username: glk, password: guess}}\n\
             \x20 static_configs: [{{targets: ['127.0.0.1:{tls}']}}]\n",
            ca = ca.display()
        ),
    )
    .unwrap();
    if let Some((ok, out)) = promtool(&["check", "config", "prometheus.yml"], "", t.dir.path()) {
        assert!(ok, "{out}");
    }
    Running(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                t.path("prometheus.yml").display()
            ))
            .arg(format!("--storage.tsdb.path={}", t.path("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn a_real_prometheus_scrapes_it_plain_and_over_tls_with_basic_auth() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        return testdata::skip(
            "a_real_prometheus_scrapes_it",
            "prometheus is not installed (apt-get install prometheus)",
        );
    }
    let t = Tree::new("Yes");
    let Some(web) = tls_config(t.dir.path()) else {
        return testdata::skip(
            "a_real_prometheus_scrapes_it",
            "openssl cannot make a certificate",
        );
    };
    let (plain, tls, prom) = (free_port(), free_port(), free_port());
    let _plain = serve(&t, plain, &["--stuck-after", "10"]);
    let web_arg = web.to_str().unwrap().to_string();
    let _tls = serve(&t, tls, &["--web.config.file", &web_arg]);
    let _prom = prometheus(&t, prom, plain, tls);
    // Every series of the plain job equals the raw counts (Prometheus read OpenMetrics:
    // its default Accept asks for it first).
    let raw = count_raw();
    let glocks = wait_for(prom, "gfs2_glocks{job=\"glk\"}");
    for (labels, v) in &glocks {
        let key = (
            labels["type"].as_str().unwrap().to_string(),
            labels["state"].as_str().unwrap().to_string(),
        );
        assert_eq!(*v, *raw.glocks.get(&key).unwrap_or(&0) as f64, "{labels}");
    }
    assert_eq!(
        glocks.iter().map(|(_, v)| v).sum::<f64>(),
        raw.glocks.values().sum::<u64>() as f64
    );
    for (labels, v) in wait_for(prom, "dlm_locks{job=\"glk\"}") {
        let key = (
            labels["queue"].as_str().unwrap().to_string(),
            labels["master"].as_str().unwrap().to_string(),
        );
        assert_eq!(v, *raw.dlm.get(&key).unwrap_or(&0) as f64, "{labels}");
    }
    for (labels, v) in wait_for(prom, "gfs2_dlm_requests_total{job=\"glk\"}") {
        let ty = labels["type"].as_str().unwrap();
        assert_eq!(v, raw.requests[ty] as f64, "{labels}");
    }
    let stuck = wait_for(prom, "glk_findings{job=\"glk\",code=\"GLK-STUCK-WAITER\"}");
    assert_eq!(stuck[0].1, 1.0);
    assert_eq!(stuck[0].0["severity"], "error");
    tls_needs_the_password(prom, &raw);
}

/// Over TLS with the right password the exporter is scraped and gives the raw counts;
/// with a wrong one it is refused (up 0), and it said 401.
fn tls_needs_the_password(prom: u16, raw: &Counts) {
    // Over TLS with the right password: scraped; with a wrong one: refused (up 0).
    let due = Instant::now() + Duration::from_secs(60);
    loop {
        let tls_up = query(prom, "up{job=\"glk-tls\"}");
        let wrong_up = query(prom, "up{job=\"glk-wrong-password\"}");
        if tls_up.first().map(|x| x.1) == Some(1.0) && wrong_up.first().map(|x| x.1) == Some(0.0) {
            break;
        }
        assert!(
            Instant::now() < due,
            "tls: {tls_up:?}, wrong password: {wrong_up:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let tls_glocks = wait_for(prom, "sum(gfs2_glocks{job=\"glk-tls\"})");
    assert_eq!(tls_glocks[0].1, raw.glocks.values().sum::<u64>() as f64);
    // The plain exporter answered a request without a password: the TLS one never did.
    let refused = wait_for(
        prom,
        "glk_exporter_http_responses_total{job=\"glk-tls\",code=\"401\"}",
    );
    assert!(refused[0].1 >= 1.0, "{refused:?}");
}

#[test]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    let dir = testdata::workspace().join("packaging/prometheus");
    match promtool(&["check", "rules", "glk-alerts.yml"], "", &dir) {
        None => {
            return testdata::skip(
                "alert_rules_pass_promtool",
                "promtool is not installed (apt-get install prometheus)",
            )
        }
        Some((ok, out)) => assert!(ok, "{out}"),
    }
    let (ok, out) = promtool(&["test", "rules", "glk-alerts.test.yml"], "", &dir).unwrap();
    assert!(ok, "{out}");
}

/// The metric names an expression uses (identifiers followed by `{`, `[` or a space that
/// are not PromQL's own words).
fn metric_names(expr: &str) -> Vec<String> {
    const PROMQL: [&str; 13] = [
        "sum",
        "by",
        "rate",
        "and",
        "on",
        "max",
        "min",
        "avg",
        "count",
        "without",
        "or",
        "unless",
        "histogram_quantile",
    ];
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &expr[start..i];
            let inside_braces =
                expr[..start].matches('{').count() > expr[..start].matches('}').count();
            let inside_parens_label = expr[..start].ends_with('(') && expr[i..].starts_with(',');
            if !inside_braces
                && !inside_parens_label
                && !PROMQL.contains(&word)
                && !word.starts_with("__")
                && word.contains('_')
            {
                out.push(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn the_dashboard_and_rules_use_only_metrics_the_exporter_serves() {
    let t = Tree::new("Yes");
    let (text, _) = t.once(&[]);
    let mut served: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    // Every family served is defined in the one list of them.
    for name in &served {
        let family = name.strip_suffix("_total").unwrap_or(name);
        assert!(
            exporter::metrics::all().any(|m| m.name == family),
            "{name} is served but not in exporter::metrics::all()"
        );
    }
    // And what --trace serves (its families as the text format names their series).
    for m in exporter::metrics::TRACE {
        for suffix in ["_bucket", "_sum", "_count", "_total"] {
            served.push(format!("{}{suffix}", m.name));
        }
    }
    served.sort();
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            testdata::workspace().join("packaging/grafana/glk-dashboard.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut exprs: Vec<String> = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    assert!(exprs.len() >= 19);
    let rules =
        std::fs::read_to_string(testdata::workspace().join("packaging/prometheus/glk-alerts.yml"))
            .unwrap();
    for l in rules.lines() {
        if let Some(e) = l.trim().strip_prefix("expr: ") {
            exprs.push(e.to_string());
        }
    }
    exprs.push("gfs2_dlm_rtt_seconds rate(gfs2_dlm_requests_total[5m])".into());
    let mut used = 0;
    for e in &exprs {
        for name in metric_names(e) {
            used += 1;
            assert!(
                served.contains(&name),
                "{name} (in {e}) is not served: {served:?}"
            );
        }
    }
    assert!(used >= 25, "{used}");
}

#[test]
fn the_systemd_unit_is_valid_and_confined() {
    let unit = testdata::workspace().join("packaging/systemd/glk-exporter.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(text.contains("ExecStart=/usr/bin/glk exporter $GLK_EXPORTER_ARGS"));
    let dir = tempfile::tempdir().unwrap();
    // verify checks the command exists: point it at one that does.
    let copy = dir.path().join("glk-exporter.service");
    std::fs::write(&copy, text.replace("/usr/bin/glk", GLK)).unwrap();
    let Ok(o) = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&copy)
        .output()
    else {
        return testdata::skip(
            "the_systemd_unit_is_valid",
            "systemd-analyze is not installed",
        );
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--no-pager"])
        .arg(&copy)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let level = out
        .lines()
        .find_map(|l| {
            l.split("Overall exposure level for glk-exporter.service: ")
                .nth(1)
        })
        .unwrap_or_else(|| panic!("{out}"));
    let score: f64 = level.split_whitespace().next().unwrap().parse().unwrap();
    assert!(score < 3.0, "exposure {level}");
}

#[test]
fn a_client_that_reconnects_at_once_is_not_refused() {
    // One place: each scrape's connection must be freed before the client sees it close,
    // or the next one, made at once, would be answered 503.
    let t = Tree::new("Yes");
    let port = free_port();
    let _e = serve(&t, port, &["--web.max-connections", "1"]);
    let codes: Vec<u16> = (0..300).map(|_| get(port, "/metrics", "").0).collect();
    assert!(codes.iter().all(|&c| c == 200), "{codes:?}");
}

#[test]
fn a_stop_signal_ends_it_cleanly_and_trace_needs_gfs2_and_time() {
    let t = Tree::new("Yes");
    let port = free_port();
    let mut e = serve(&t, port, &[]);
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(e.0.id() as i32, libc::SIGTERM) }, 0);
    let due = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = e.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < due,
            "glk exporter still runs 5 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");

    let o = t.exporter(&["--trace", "--once"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not with --once"));

    let tracefs = Path::new("/sys/kernel/tracing");
    if tracefs.join("events/gfs2").exists() {
        return; // the lab job exporter-live.sh traces gfs2 for real
    }
    let instances = || std::fs::read_dir(tracefs.join("instances")).map(|d| d.count());
    let before = instances();
    let o = t
        .exporter(&["--trace", "--web.listen-address", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("gfs2 events not available") || err.contains("needs root"),
        "{err}"
    );
    assert_eq!(before.ok(), instances().ok(), "tracefs as found");
}
