//! `--trace`: histograms of DLM round trips and of glock waits and holds, and remote demote
//! counts, from the gfs2 tracepoints, read in a private tracefs instance (`glk-PID`) by a
//! thread of their own for as long as the exporter runs; the instance is removed and
//! tracefs restored on every exit ([`Tracer::stop`]), as `glk trace` does. It judges
//! GLK-HOT-GLOCK by `glk doctor`'s threshold (`--hot-demotes` remote demotes) over the last
//! one to two minutes.
//!
//! Events are paired by the rules `glk analyze` uses: round trips from
//! `gfs2_glock_lock_time` (blocking or not by the flags of the state change that follows,
//! unlock replies never blocking), waits and holds from `gfs2_glock_queue` and
//! `gfs2_promote` ([`analysis::hold_wait::GlockState`]). Memory is bounded: a glock's state
//! is kept only while it has holders, and at most [`MAX_STATES`] of them.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use analysis::findings::{FindingCode, Thresholds};
use analysis::hold_wait::{Ended, GlockState};
use gfs2stats::lock_time::DLM_EUNLOCK;
use glockparse::{GlockId, GlockType};
use traceparse::line::BadLine;
use traceparse::raw::PageTally;
use traceparse::reader::Next;
use traceparse::sink::{Decoder, Sink};
use traceparse::{BlockReader, Decoded, Dev, Gfs2Event};
use tracepipe::raw::{Prefer, RawTally};
use tracepipe::{Instance, Tracefs};

use super::{Collected, Collector};
use crate::exposition::Family;
use crate::metrics;

/// The gfs2 events read.
pub const EVENTS: [&str; 5] = [
    "gfs2_glock_lock_time",
    "gfs2_glock_state_change",
    "gfs2_glock_queue",
    "gfs2_promote",
    "gfs2_demote_rq",
];

/// Glocks whose holders are followed at most (a state is dropped when its glock has no
/// holder left; past this, every state is dropped and counted).
pub const MAX_STATES: usize = 262_144;

/// Upper bounds (seconds) of the DLM round-trip buckets.
const RTT_BUCKETS: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0,
];
/// Upper bounds (seconds) of the wait and hold buckets.
const HOLD_BUCKETS: [f64; 15] = [
    0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
/// How long one window of remote demote counts lasts (a glock is hot on the counts of the
/// current and the previous window).
const WINDOW: Duration = Duration::from_secs(60);

/// A cumulative histogram over fixed buckets.
#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    fn observe(&mut self, secs: f64) {
        if let Some(i) = self.bounds.iter().position(|b| secs <= *b) {
            self.counts[i] += 1;
        }
        self.sum += secs;
        self.count += 1;
    }

    fn add_to(&self, f: &mut Family, labels: &[(&'static str, &str)]) {
        let mut cum = 0;
        for (b, n) in self.bounds.iter().zip(&self.counts) {
            cum += n;
            let le = b.to_string();
            let mut l = labels.to_vec();
            l.push(("le", &le));
            f.add_suffixed("_bucket", &l, cum as f64);
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        f.add_suffixed("_bucket", &l, self.count as f64);
        f.add_suffixed("_sum", labels, self.sum);
        f.add_suffixed("_count", labels, self.count as f64);
    }
}

/// What the trace has shown so far.
#[derive(Debug)]
struct State {
    /// Filesystems by device, from sysfs (`fs/gfs2/TABLE/id`).
    tables: HashMap<Dev, String>,
    sysfs: PathBuf,
    rtt: BTreeMap<(String, GlockType, bool), Histogram>,
    wait: BTreeMap<(String, GlockType), Histogram>,
    hold: BTreeMap<(String, GlockType), Histogram>,
    remote_demotes: BTreeMap<(String, GlockType), u64>,
    /// A round trip waiting for its state change to say whether it blocked.
    pending: HashMap<(Dev, GlockId), (f64, String)>,
    holders: HashMap<(Dev, GlockId), GlockState>,
    dropped_states: u64,
    /// Remote demotes per glock in the current and the previous window.
    window: [HashMap<(Dev, GlockId), u64>; 2],
    window_start: Instant,
    events: u64,
    lost: u64,
    /// Lines that were not trace text (read from `trace_pipe`).
    bad_lines: u64,
}

impl State {
    fn new(sysfs: &Path) -> State {
        State {
            tables: HashMap::new(),
            sysfs: sysfs.to_path_buf(),
            rtt: BTreeMap::new(),
            wait: BTreeMap::new(),
            hold: BTreeMap::new(),
            remote_demotes: BTreeMap::new(),
            pending: HashMap::new(),
            holders: HashMap::new(),
            dropped_states: 0,
            window: [HashMap::new(), HashMap::new()],
            window_start: Instant::now(),
            events: 0,
            lost: 0,
            bad_lines: 0,
        }
    }

    /// The lock table of a device (sysfs is read again for a device not seen yet).
    fn table(&mut self, dev: Dev) -> String {
        if !self.tables.contains_key(&dev) {
            self.tables = tables(&self.sysfs);
        }
        self.tables
            .get(&dev)
            .cloned()
            .unwrap_or_else(|| dev.to_string())
    }

    /// Moves to a new window of remote demote counts when the current one is over.
    fn roll(&mut self, now: Instant) {
        if now.duration_since(self.window_start) >= WINDOW {
            let old = std::mem::take(&mut self.window[1]);
            self.window[1] = std::mem::replace(&mut self.window[0], old);
            self.window[0].clear();
            // Two windows or more without events: the previous one is empty too.
            if now.duration_since(self.window_start) >= 2 * WINDOW {
                self.window[1].clear();
            }
            self.window_start = now;
        }
    }

    /// Feeds one gfs2 event.
    fn event(&mut self, ts_ns: u64, pid: i64, dev: Dev, e: &Gfs2Event) {
        self.events += 1;
        let Some(glock) = e.glock() else {
            return;
        };
        let table = self.table(dev);
        let ty = glock.glock_type();
        match e {
            Gfs2Event::GlockLockTime(lt) if lt.tdiff >= 0 => {
                let secs = lt.tdiff as f64 / 1e9;
                if lt.status == DLM_EUNLOCK {
                    self.observe_rtt(&table, ty, false, secs);
                } else if self.pending.len() < MAX_STATES {
                    if let Some((earlier, _)) =
                        self.pending.insert((dev, glock), (secs, table.clone()))
                    {
                        // Its state change was not traced: counted as not blocking.
                        self.observe_rtt(&table, ty, false, earlier);
                    }
                }
            }
            Gfs2Event::GlockStateChange { flags, .. } => {
                if let Some((secs, t)) = self.pending.remove(&(dev, glock)) {
                    self.observe_rtt(&t, ty, flags.letters.contains('b'), secs);
                }
            }
            Gfs2Event::DemoteRq {
                remote: Some(true), ..
            } => {
                *self.remote_demotes.entry((table.clone(), ty)).or_default() += 1;
                *self.window[0].entry((dev, glock)).or_default() += 1;
            }
            _ => {}
        }
        self.pair(ts_ns, pid, dev, glock, &table, e);
    }

    /// Pairs queue, promote and dequeue into waits and holds.
    fn pair(&mut self, ts_ns: u64, pid: i64, dev: Dev, glock: GlockId, table: &str, e: &Gfs2Event) {
        if !matches!(
            e,
            Gfs2Event::GlockQueue { .. }
                | Gfs2Event::Promote { .. }
                | Gfs2Event::DemoteRq { .. }
                | Gfs2Event::GlockStateChange { .. }
        ) {
            return;
        }
        if self.holders.len() >= MAX_STATES && !self.holders.contains_key(&(dev, glock)) {
            self.dropped_states += self.holders.len() as u64;
            self.holders.clear();
        }
        let s = self.holders.entry((dev, glock)).or_default();
        let ended = s.step(ts_ns, pid, e);
        if s.is_idle() {
            self.holders.remove(&(dev, glock));
        }
        let ty = glock.glock_type();
        let key = || (table.to_string(), ty);
        match ended {
            Some(Ended::Wait(ns)) => self
                .wait
                .entry(key())
                .or_insert_with(|| Histogram::new(&HOLD_BUCKETS))
                .observe(ns as f64 / 1e9),
            Some(Ended::Hold(ns)) => self
                .hold
                .entry(key())
                .or_insert_with(|| Histogram::new(&HOLD_BUCKETS))
                .observe(ns as f64 / 1e9),
            _ => {}
        }
    }

    fn observe_rtt(&mut self, table: &str, ty: GlockType, blocking: bool, secs: f64) {
        self.rtt
            .entry((table.to_string(), ty, blocking))
            .or_insert_with(|| Histogram::new(&RTT_BUCKETS))
            .observe(secs);
    }

    /// Glocks with at least `hot_demotes` remote demotes over the two windows.
    fn hot(&self, t: &Thresholds) -> u64 {
        let mut sums: HashMap<&(Dev, GlockId), u64> = HashMap::new();
        for w in &self.window {
            for (g, n) in w {
                *sums.entry(g).or_default() += n;
            }
        }
        sums.values().filter(|n| t.is_hot(**n)).count() as u64
    }
}

/// The lock table of each GFS2 device, from `SYSFS/fs/gfs2/TABLE/id` (`MAJOR:MINOR`).
fn tables(sysfs: &Path) -> HashMap<Dev, String> {
    bundle::live::named_filesystems(sysfs)
        .into_iter()
        .filter_map(|f| {
            let (major, minor) = f.ids.dev?;
            Some((Dev { major, minor }, f.table))
        })
        .collect()
}

/// Feeds every line of `block` to `state`.
fn feed(decoder: &mut Decoder, state: &Mutex<State>, block: &[u8]) {
    let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
    st.roll(Instant::now());
    let _ = decoder.block(block, &mut StateSink(&mut st));
}

/// The tracing thread's [`Sink`]: gfs2 events into the state, lines that are not trace
/// text counted. `[LOST N EVENTS]` lines tell of the losses the instance's counts hold:
/// those are read apart, every second.
struct StateSink<'a>(&'a mut State);

impl Sink for StateSink<'_> {
    fn line(&mut self, _: u64, _: &[u8], d: Decoded<'_>) -> io::Result<bool> {
        if let Decoded::Gfs2 { line, dev, event } = d {
            self.0.event(line.ts_ns, line.pid, dev, &event);
        }
        Ok(true)
    }

    fn bad_line(&mut self, _: u64, _: &[u8], _: BadLine) -> io::Result<bool> {
        self.0.bad_lines += 1;
        Ok(true)
    }
}

/// The tracing thread and what it has seen.
pub struct Tracer {
    state: Arc<Mutex<State>>,
    /// The raw reader's count of what it could not print (None when reading text).
    tally: Option<RawTally>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Tracer {
    /// Creates the private instance, enables the gfs2 events and starts reading them. An
    /// error (not root, no tracefs, no gfs2 module) leaves tracefs as it was.
    pub fn start(sysfs: &Path) -> io::Result<Tracer> {
        if !tracepipe::tracefs::is_root() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "--trace needs root (tracefs)",
            ));
        }
        let tfs = Tracefs::locate(true).map_err(io::Error::other)?;
        if !tfs.has_event("gfs2", None) {
            return Err(io::Error::other(tracepipe::TraceError::NoGfs2.to_string()));
        }
        let (mut inst, removed) = Instance::private(&tfs).map_err(io::Error::other)?;
        for name in removed {
            eprintln!(
                "glk exporter: removed tracefs instance {name}, left by a glk that was killed"
            );
        }
        let mut events = Vec::new();
        for e in EVENTS {
            if tfs.has_event("gfs2", Some(e)) {
                inst.enable("gfs2", e).map_err(io::Error::other)?;
                events.push(("gfs2".to_string(), e.to_string()));
            }
        }
        // Raw ring-buffer pages where glk can print the events (it always can gfs2's).
        let live = tracepipe::raw::live_reader(&tfs, &inst, &events, Prefer::Auto, true)
            .map_err(io::Error::other)?;
        let (reader, tally) = (live.reader, live.tally);
        inst.tracing_on().map_err(io::Error::other)?;
        let state = Arc::new(Mutex::new(State::new(sysfs)));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("glk-trace".into())
            .spawn({
                let tally = tally.clone();
                move || read(tfs, inst, (reader, tally), &st, &sp)
            })?;
        Ok(Tracer {
            state,
            tally,
            stop,
            thread: Some(thread),
        })
    }

    /// The collector of what this tracer sees.
    pub fn collector(&self, thresholds: Thresholds) -> TraceCollector {
        TraceCollector {
            state: self.state.clone(),
            tally: self.tally.clone(),
            thresholds,
            bad_lines_said: 0,
        }
    }

    /// Stops tracing: the instance's events off, the instance removed, tracefs as found.
    pub fn stop(mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the tracing thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The tracing thread: reads blocks until stopped, then restores tracefs and says what the
/// raw reader could not print, as `glk trace` does at its end. `tfs` comes first: on a
/// panic, parameters drop last to first, and the instance must go before its tracefs for
/// a tracefs glk mounted to be unmounted (the instance holds the mount).
fn read(
    tfs: Tracefs,
    mut inst: Instance,
    (reader, tally): (BlockReader, Option<RawTally>),
    state: &Mutex<State>,
    stop: &AtomicBool,
) -> io::Result<()> {
    let mut decoder = Decoder::new();
    let mut stopping = false;
    let mut last_losses = Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) && !stopping {
            stopping = true;
            inst.tracing_off();
            reader.drain();
        }
        match reader.next_block_timeout(Duration::from_millis(100)) {
            Next::Block(b) => {
                feed(&mut decoder, state, &b);
                reader.recycle(b);
            }
            Next::Idle => {}
            Next::Done => break,
        }
        if last_losses.elapsed() >= Duration::from_secs(1) {
            last_losses = Instant::now();
            let lost = inst.losses().total();
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            st.lost = st.lost.max(lost);
        }
    }
    inst.tracing_off();
    let read = reader.finish();
    if let Some(t) = &tally {
        for w in t.lock().unwrap_or_else(|e| e.into_inner()).warnings() {
            eprintln!("glk exporter: --trace: {w}");
        }
    }
    inst.close().map_err(io::Error::other)?;
    if let Some(w) = tfs.release().warning() {
        eprintln!("glk exporter: --trace: {w}");
    }
    read.map(|_| ())
}

/// The collector of a [`Tracer`]'s histograms and counts.
pub struct TraceCollector {
    state: Arc<Mutex<State>>,
    tally: Option<RawTally>,
    thresholds: Thresholds,
    /// The state's bad lines already reported as malformed.
    bad_lines_said: u64,
}

impl Collector for TraceCollector {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn collect(&mut self) -> io::Result<Collected> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.roll(Instant::now());
        let tally = self.tally.as_ref().map_or_else(PageTally::default, |t| {
            t.lock().unwrap_or_else(|e| e.into_inner()).clone()
        });
        let mut c = families(&st, &tally, &self.thresholds);
        c.malformed = st.bad_lines - self.bad_lines_said;
        self.bad_lines_said = st.bad_lines;
        Ok(c)
    }
}

/// The families of what `st` holds, and of what the raw reader could not print (`tally`).
fn families(st: &State, tally: &PageTally, t: &Thresholds) -> Collected {
    let mut rtt = metrics::DLM_REQUEST_DURATION_SECONDS.family();
    for ((fs, ty, blocking), h) in &st.rtt {
        let ty = ty.name();
        let b = if *blocking { "true" } else { "false" };
        h.add_to(&mut rtt, &[("fs", fs), ("type", &ty), ("blocking", b)]);
    }
    let mut wait = metrics::GLOCK_WAIT_DURATION_SECONDS.family();
    for ((fs, ty), h) in &st.wait {
        h.add_to(&mut wait, &[("fs", fs), ("type", &ty.name())]);
    }
    let mut hold = metrics::GLOCK_HOLD_DURATION_SECONDS.family();
    for ((fs, ty), h) in &st.hold {
        h.add_to(&mut hold, &[("fs", fs), ("type", &ty.name())]);
    }
    let mut demotes = metrics::GLOCK_REMOTE_DEMOTES.family();
    for ((fs, ty), n) in &st.remote_demotes {
        demotes.add(&[("fs", fs), ("type", &ty.name())], *n as f64);
    }
    let mut events = metrics::EXPORTER_TRACE_EVENTS.family();
    events.add(&[], st.events as f64);
    let mut lost = metrics::EXPORTER_TRACE_LOST_EVENTS.family();
    lost.add(&[], st.lost as f64);
    let mut dropped = metrics::EXPORTER_TRACE_DROPPED_STATES.family();
    dropped.add(&[], st.dropped_states as f64);
    let mut unprinted = metrics::EXPORTER_TRACE_UNPRINTED.family();
    unprinted.add(
        &[("what", "unknown_event_records")],
        tally.unknown_records as f64,
    );
    unprinted.add(&[("what", "bad_pages")], tally.bad_pages as f64);
    Collected {
        families: vec![rtt, wait, hold, demotes, events, lost, dropped, unprinted],
        findings: vec![(FindingCode::HotGlock, st.hot(t))],
        malformed: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Kind;

    /// Every event of a real node's trace, fed as the tracing thread feeds them.
    fn fed(rel: &str) -> State {
        let text = testdata::text(rel);
        let st = Mutex::new(State::new(Path::new("/nonexistent")));
        let mut d = Decoder::new();
        // Blocks of whole lines, as the block reader hands them out.
        let mut start = 0;
        let bytes = text.as_bytes();
        while start < bytes.len() {
            let mut end = (start + (1 << 16)).min(bytes.len());
            while end < bytes.len() && bytes[end - 1] != b'\n' {
                end += 1;
            }
            feed(&mut d, &st, &bytes[start..end]);
            start = end;
        }
        st.into_inner().unwrap()
    }

    #[test]
    fn counts_are_those_of_the_events() {
        let rel = "real/dlm2-6.1/n2/trace_pipe.txt.xz";
        let text = testdata::text(rel);
        let count = |ev: &str| text.lines().filter(|l| l.contains(ev)).count() as u64;
        let st = fed(rel);
        let remote = text
            .lines()
            .filter(|l| l.contains("gfs2_demote_rq:") && l.contains(" remote"))
            .count() as u64;
        assert!(remote > 0);
        assert_eq!(st.remote_demotes.values().sum::<u64>(), remote);
        // Every round trip is in a histogram but those still waiting for a state change.
        let rtts: u64 = st.rtt.values().map(|h| h.count).sum();
        assert_eq!(
            rtts + st.pending.len() as u64,
            count("gfs2_glock_lock_time:")
        );
        assert!(st.rtt.keys().any(|k| k.2) && st.rtt.keys().any(|k| !k.2));
        // Waits and holds: as many as glk analyze pairs (its rule, per glock).
        let mut pairing = analysis::hold_wait::Pairing::default();
        for l in text.lines() {
            if let Ok(Decoded::Gfs2 { line, event, .. }) = traceparse::decode_line(l.as_bytes()) {
                if let Some(g) = event.glock() {
                    pairing.add(line.ts_ns, line.pid, g, &event);
                }
            }
        }
        let waits: u64 = pairing
            .times
            .values()
            .map(|t| t.wait.samples.distribution().count)
            .sum();
        let holds: u64 = pairing
            .times
            .values()
            .map(|t| t.hold.samples.distribution().count)
            .sum();
        assert_eq!(st.wait.values().map(|h| h.count).sum::<u64>(), waits);
        assert_eq!(st.hold.values().map(|h| h.count).sum::<u64>(), holds);
        assert!(holds > 1000, "{holds}");
        // Cumulative buckets: the +Inf bucket is the count.
        let mut f = Family::new("x", Kind::Histogram, "x");
        let h = st.hold.values().next().unwrap();
        h.add_to(&mut f, &[("fs", "a")]);
        let inf = f
            .samples
            .iter()
            .find(|s| s.labels.iter().any(|(k, v)| *k == "le" && v == "+Inf"))
            .unwrap();
        assert_eq!(inf.value, h.count as f64);
        let buckets: Vec<f64> = f
            .samples
            .iter()
            .filter(|s| s.suffix == "_bucket")
            .map(|s| s.value)
            .collect();
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]));
        let served: Vec<&str> = families(&st, &PageTally::default(), &Thresholds::default())
            .families
            .iter()
            .map(|f| f.name)
            .collect();
        let defined: Vec<&str> = metrics::TRACE.iter().map(|m| m.name).collect();
        assert_eq!(served, defined);
    }

    /// Lines that are not trace text are malformed input of the collector, each said in one
    /// collection; what the raw reader could not print is its own family.
    #[test]
    fn what_could_not_be_read_is_counted() {
        let state = Arc::new(Mutex::new(State::new(Path::new("/nonexistent"))));
        let mut d = Decoder::new();
        let good = testdata::text("real/dlm2-6.1/n2/trace_pipe.txt.xz");
        let good: String = good.lines().take(50).map(|l| format!("{l}\n")).collect();
        feed(
            &mut d,
            &state,
            format!("{good}not a trace line\n\x01\n").as_bytes(),
        );
        let tally: RawTally = Arc::default();
        {
            let mut t = tally.lock().unwrap();
            t.unknown_records = 7;
            t.bad_pages = 2;
        }
        let mut c = TraceCollector {
            state: state.clone(),
            tally: Some(tally),
            thresholds: Thresholds::default(),
            bad_lines_said: 0,
        };
        let first = c.collect().unwrap();
        assert_eq!(first.malformed, 2);
        assert_eq!(c.collect().unwrap().malformed, 0, "said once");
        assert_eq!(state.lock().unwrap().events, 50);
        let f = first
            .families
            .iter()
            .find(|f| f.name == "glk_exporter_trace_unprinted")
            .unwrap();
        let value = |what: &str| {
            f.samples
                .iter()
                .find(|s| s.labels.iter().any(|(k, v)| *k == "what" && v == what))
                .map(|s| s.value)
        };
        assert_eq!(value("unknown_event_records"), Some(7.0));
        assert_eq!(value("bad_pages"), Some(2.0));
    }

    #[test]
    fn hot_glocks_by_doctors_threshold_over_two_windows() {
        let mut st = State::new(Path::new("/nonexistent"));
        let dev = Dev {
            major: 253,
            minor: 0,
        };
        let g = GlockId::new(2, 0x42);
        let ev = Gfs2Event::DemoteRq {
            glock: g,
            from: traceparse::DlmMode::EX,
            to: traceparse::DlmMode::NL,
            flags: traceparse::TraceFlags::default(),
            remote: Some(true),
        };
        for i in 0..15 {
            st.event(i, 1, dev, &ev);
        }
        let t = Thresholds::default();
        assert_eq!(st.hot(&t), 0);
        st.window_start -= WINDOW;
        st.roll(Instant::now());
        for i in 0..5 {
            st.event(100 + i, 1, dev, &ev);
        }
        assert_eq!(st.hot(&t), 1, "15 + 5 over the two windows");
        st.window_start -= 2 * WINDOW;
        st.roll(Instant::now());
        assert_eq!(st.hot(&t), 0, "both windows are over");
        assert_eq!(st.remote_demotes.values().sum::<u64>(), 20);
    }

    /// On a kernel without gfs2 events, `--trace` fails naming them, makes no instance,
    /// and leaves the tracefs mounts as found, whether tracefs was mounted or not.
    #[test]
    fn without_gfs2_events_start_fails_and_leaves_tracefs_alone() {
        const T: &str = "trace_start_without_gfs2";
        if !testdata::as_root(T, "--trace needs root") {
            return;
        }
        let mounted = || {
            bundle::mounts::of_this_process()
                .into_iter()
                .filter(|m| m.fs_type == "tracefs")
                .map(|m| (m.mount_point, m.source))
                .collect::<Vec<_>>()
        };
        let before = mounted();
        let tfs = Tracefs::locate(true).unwrap();
        if tfs.has_event("gfs2", None) {
            return testdata::skip(T, "this kernel has gfs2 events");
        }
        let instances = || {
            std::fs::read_dir(tfs.dir().join("instances"))
                .unwrap()
                .count()
        };
        let made = instances();
        let e = Tracer::start(Path::new("/sys"))
            .err()
            .expect("no gfs2 events");
        assert!(e.to_string().contains("gfs2"), "{e}");
        assert_eq!(instances(), made);
        drop(tfs);
        assert_eq!(mounted(), before);
        assert!(Tracer::start(Path::new("/sys")).is_err());
        assert_eq!(mounted(), before);
    }
}
