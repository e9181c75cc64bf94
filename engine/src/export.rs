//! `glk export`: every frame of capture bundles as Hive-partitioned Parquet.

use std::io;

use clikit::args::ExportArgs;

/// Rows of every frame.
fn frame_rows(f: &frames::Frames) -> usize {
    frames::KINDS
        .iter()
        .map(|k| f.get(k).map_or(0, |d| d.height()))
        .sum()
}

/// A capture's id in a dataset: when its first snapshot was taken (UTC,
/// `20261126T105717Z`) and a hash of its filesystem `fs`, nodes and snapshot times, so
/// that the same capture, wherever it is read from, has the same id, and each filesystem of
/// a capture of several its own (their snapshots may share their times: a sos report's);
/// `notime-HASH` (of `fs` and the inputs' paths) when no snapshot recorded its time.
fn capture_id(caps: &frames::Captures, fs: Option<&str>, inputs: &[std::path::PathBuf]) -> String {
    // FNV-1a, 64 bits: stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    if let Some(fs) = fs {
        eat(b"fs=");
        eat(fs.as_bytes());
        eat(&[0]);
    }
    let first = caps
        .nodes
        .iter()
        .flat_map(|n| n.snapshots.iter().filter_map(|s| s.time_unix))
        .reduce(f64::min);
    match first {
        Some(_) => {
            for n in &caps.nodes {
                eat(n.node.as_bytes());
                for s in &n.snapshots {
                    eat(&s.time_unix.unwrap_or(0.0).to_bits().to_le_bytes());
                }
            }
        }
        None => {
            for p in inputs {
                let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
                eat(p.as_os_str().as_encoded_bytes());
            }
        }
    }
    let stamp = first.map_or_else(
        || "notime".to_string(),
        |t| {
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t.max(0.0));
            let digits: String = clikit::fmt::utc(at)
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            format!("{}T{}Z", &digits[..8], &digits[8..14])
        },
    );
    format!("{stamp}-{:08x}", h >> 32)
}

/// The lock table of the one filesystem the captures are of (after
/// [`frames::Captures::keep_filesystem`], at most one), when they say.
fn filesystem(caps: &frames::Captures) -> Option<String> {
    match caps.filesystems().as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// The capture of `caps` as `--dataset` adds it: in the cluster `--cluster` names, else
/// the one its lock table names (`CLUSTER:FS`).
fn dataset_capture(
    caps: &frames::Captures,
    a: &ExportArgs,
) -> io::Result<frames::export::DatasetCapture> {
    let fs = filesystem(caps);
    let from_table = || Some(bundle::filesystems::cluster(fs.as_deref()?)?.to_string());
    let cluster = a.cluster.clone().or_else(from_table).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "--dataset: these captures do not say which cluster they are of (no lock \
             table): give it with --cluster NAME",
        )
    })?;
    Ok(frames::export::DatasetCapture {
        id: capture_id(caps, fs.as_deref(), &a.captures),
        cluster,
        fs,
    })
}

/// Reads the captures into frames and writes them as Parquet under `--output`, or adds
/// them to the dataset of `--dataset`.
pub fn run(a: &ExportArgs) -> io::Result<()> {
    let mut caps = frames::discover(&a.captures)?;
    caps.keep_filesystem(a.filesystem.only())?;
    let dataset = match &a.dataset {
        Some(dir) => Some((dir, dataset_capture(&caps, a)?)),
        None => None,
    };
    for l in caps.notes() {
        eprintln!("glk: {l}");
    }
    let f = frames::load(&caps)?;
    clikit::diag::captures_recognised(&a.captures, frame_rows(&f), &f.diagnostics)?;
    let t = std::time::Instant::now();
    let written = match (&a.output, dataset) {
        (Some(dir), _) => frames::export::export(&f, dir)?,
        (None, Some((dir, capture))) => {
            let (id, cluster) = (&capture.id, &capture.cluster);
            match &capture.fs {
                Some(fs) => eprintln!("glk: capture {id} of cluster {cluster}, {fs}"),
                None => eprintln!(
                    "glk: capture {id} of cluster {cluster} (it does not say which filesystem)"
                ),
            }
            frames::export::dataset(&f, dir, &capture)?
        }
        (None, None) => unreachable!("clap requires -o or --dataset"),
    };
    let rows: usize = written.iter().map(|w| w.rows).sum();
    for w in &written {
        println!("{:>9} rows  {}", w.rows, w.path.display());
    }
    eprintln!(
        "glk: wrote {rows} rows in {} files in {:.2}s",
        written.len(),
        t.elapsed().as_secs_f64()
    );
    clikit::diag::report(&f.diagnostics);
    Ok(())
}
