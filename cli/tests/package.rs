//! The packages (scripts/package.sh --native, from the test build): both .deb files install
//! on this machine and run; with the engine package removed, the node package still runs
//! analyze, doctor and report, and says which package `export` needs; the .rpm files hold
//! the same files and requirements. The distributable packages (glk for glibc 2.17 with a static
//! libtracefs, glk-engine for 2.28) are tested on Debian 11 and 13 userlands by
//! scripts/test-distros.sh.
//!
//! This file holds one test, so that no other test runs while glk is installed in /usr/bin.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// Removes the packages however the test ends.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg")
            .args(["--purge", "glk-engine", "glk"])
            .output();
    }
}

fn glk_installed(args: &[&str]) -> Output {
    // A plain environment: the engine must be found next to /usr/bin/glk, not through
    // this workspace.
    Command::new("/usr/bin/glk")
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

#[test]
fn packages_install_and_run() {
    let Some(glk) = can_install() else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let (listing, with_rpm) = package(&glk, out.path());
    let find = |pre: &str, ext: &str| -> PathBuf {
        std::fs::read_dir(out.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with(pre) && n.ends_with(ext)
            })
            .unwrap_or_else(|| panic!("no {pre}*{ext} in {listing}"))
    };
    let (node_deb, engine_deb) = (find("glk_", ".deb"), find("glk-engine_", ".deb"));

    depends_as_they_should(&node_deb, &engine_deb);

    let _purge = Purge;
    run(Command::new("dpkg")
        .arg("-i")
        .arg(&node_deb)
        .arg(&engine_deb));
    installed_and_running();
    without_the_engine(
        &testdata::path("real/dlm2-6.1"),
        &testdata::path("real/dlm2-6.1/n2/glocks.4"),
    );
    if with_rpm {
        rpm_contents_and_requirements(&find("glk-0", ".rpm"), &find("glk-engine-0", ".rpm"));
    }
}

/// The built glk, when this machine can build and install its packages; else the test is
/// skipped, saying why.
fn can_install() -> Option<PathBuf> {
    const T: &str = "packages_install_and_run";
    let (Some(glk), Some(_engine)) = (
        testdata::workspace_bin("glk"),
        testdata::workspace_bin("glk-engine"),
    ) else {
        testdata::skip(
            T,
            "glk and glk-engine are not built (run cargo test --workspace)",
        );
        return None;
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let why = if !(have("dpkg") && have("dpkg-deb") && have("objdump")) {
        "not a Debian system with dpkg-deb and objdump"
    } else if !root {
        "installing packages needs root"
    } else if installed("glk") || installed("glk-engine") {
        "glk is installed on this machine already; not replacing it"
    } else {
        return Some(glk);
    };
    testdata::skip(T, why);
    None
}

/// scripts/package.sh run over the binaries next to `glk` into `out`, without building:
/// what it listed, and whether it made the .rpm packages too (under CI it must).
fn package(glk: &Path, out: &Path) -> (String, bool) {
    let profile_dir = glk.parent().unwrap();
    let target = profile_dir.parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(p) => p,
        None => panic!("no profile directory"),
    };
    let mut pkg = Command::new("bash");
    pkg.arg(testdata::workspace().join("scripts/package.sh"))
        .args(["--native", "--profile", profile, "--no-build"])
        .arg(out)
        .env("CARGO_TARGET_DIR", target);
    let with_rpm = have("rpmbuild");
    if with_rpm {
        pkg.arg("--rpm");
    } else if testdata::under_ci() {
        panic!("packages_install_and_run: rpmbuild is missing under CI (scripts/setup-system.sh installs rpm)");
    } else {
        eprintln!("SKIPPED: packages_install_and_run: the .rpm part (no rpmbuild)");
    }
    (String::from_utf8(run(&mut pkg).stdout).unwrap(), with_rpm)
}

/// The installed files are where the packages put them, the defaults file is a conffile,
/// and the installed glk runs top and analyze on real captures.
fn installed_and_running() {
    for f in [
        "/usr/bin/glk",
        "/usr/bin/glk-engine",
        "/usr/share/man/man1/glk.1.gz",
        "/usr/share/bash-completion/completions/glk",
        "/usr/share/zsh/vendor-completions/_glk",
        "/usr/share/fish/vendor_completions.d/glk.fish",
        "/lib/systemd/system/glk-exporter.service",
        "/etc/default/glk-exporter",
        "/usr/share/glk/prometheus/glk-alerts.yml",
        "/usr/share/glk/prometheus/glk-alerts.test.yml",
        "/usr/share/glk/grafana/glk-dashboard.json",
    ] {
        assert!(Path::new(f).is_file(), "{f} not installed");
    }
    let fixture = testdata::path("real/dlm2-6.1/n2/glocks.4");
    let top = glk_installed(&["top", "--color", "never", fixture.to_str().unwrap()]);
    assert!(
        top.status.success(),
        "{}",
        String::from_utf8_lossy(&top.stderr)
    );
    assert!(String::from_utf8_lossy(&top.stdout).contains("6/60af5"));
    let conffiles =
        run(Command::new("dpkg-query").args(["-W", "-f", "${Conffiles}", "glk"])).stdout;
    assert!(
        String::from_utf8_lossy(&conffiles).contains("/etc/default/glk-exporter "),
        "the defaults file is a conffile"
    );
    let capture = testdata::path("real/dlm2-6.1");
    let analyze = glk_installed(&["analyze", capture.to_str().unwrap()]);
    assert!(
        analyze.status.success(),
        "{}",
        String::from_utf8_lossy(&analyze.stderr)
    );
    assert!(String::from_utf8_lossy(&analyze.stdout).contains("1. CONTENDED GLOCKS"));
}

/// What each package depends on: glk on libc and libtracefs, the engine on libc and the
/// glk of its own version (glk runs it with its own arguments), never on libtracefs.
fn depends_as_they_should(node_deb: &Path, engine_deb: &Path) {
    let field = |deb: &Path, f: &str| {
        String::from_utf8(run(Command::new("dpkg-deb").args(["-f"]).arg(deb).arg(f)).stdout)
            .unwrap()
    };
    let node_deps = field(node_deb, "Depends");
    assert!(
        node_deps.contains("libtracefs1") && node_deps.contains("libc6 (>= 2."),
        "{node_deps}"
    );
    let engine_deps = field(engine_deb, "Depends");
    assert!(
        engine_deps.trim().starts_with("libc6 (>= 2."),
        "{engine_deps}"
    );
    assert!(!engine_deps.contains("libtracefs"), "{engine_deps}");
    // glk runs the engine with its own arguments: the two must be of one version.
    assert!(engine_deps.contains("glk (= "), "{engine_deps}");
}

/// With the engine package removed, the node tool still analyses, and says what to install
/// for the one command that needs polars.
fn without_the_engine(capture: &Path, fixture: &Path) {
    run(Command::new("dpkg").args(["-r", "glk-engine"]));
    for cmd in [&["analyze"][..], &["doctor", "--fail-on", "critical"]] {
        let mut args = cmd.to_vec();
        args.push(capture.to_str().unwrap());
        let o = glk_installed(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let (scratch, html) = testdata::scratch_file("report.html");
    let report = glk_installed(&[
        "report",
        capture.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("</html>"));
    let out = scratch.path().join("export");
    let missing = glk_installed(&[
        "export",
        capture.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("Install the glk-engine package"), "{err}");
    assert!(glk_installed(&["top", fixture.to_str().unwrap()])
        .status
        .success());
}

/// The .rpm files hold the node tool, its man page, and require what the build needs.
fn rpm_contents_and_requirements(node_rpm: &Path, engine_rpm: &Path) {
    let q = |rpm: &Path, what: &str| {
        String::from_utf8(run(Command::new("rpm").args(["-qp", what]).arg(rpm)).stdout).unwrap()
    };
    let files = q(node_rpm, "-l");
    assert!(
        files.contains("/usr/bin/glk\n") && files.contains("glk.1.gz"),
        "{files}"
    );
    assert!(
        files.contains("/usr/lib/systemd/system/glk-exporter.service\n"),
        "{files}"
    );
    let config = q(node_rpm, "-c");
    assert_eq!(config, "/etc/sysconfig/glk-exporter\n");
    let req = q(node_rpm, "-R");
    assert!(req.contains("libtracefs.so.1"), "{req}");
    let req = q(engine_rpm, "-R");
    assert!(
        !req.contains("libtracefs") && req.contains("libc.so.6"),
        "{req}"
    );
}
