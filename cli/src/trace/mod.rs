//! `glk trace`: live gfs2 tracepoints from a private tracefs instance, or saved trace
//! text decoded offline.

mod render;
mod sink;
pub mod summary;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use glockparse::{Diagnostics, ParseError};
use traceparse::reader::Next;
use traceparse::{decode_line, Decoded, GFS2_EVENTS};
use tracepipe::raw::{LiveReader, Prefer};
use tracepipe::{stop, Instance, TraceError, Tracefs};

pub use sink::hostname;
use sink::TraceOut;
use summary::Summary;
use traceparse::sink::{Decoder, Sink};

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Events: gfs2 names with or without `gfs2_`, `gfs2` or `all` for every gfs2 event,
    /// `dlm` for every dlm event (skipped with a warning on kernels without them), and
    /// SYSTEM:EVENT for any other (sched:sched_switch, ftrace:print, block:*...).
    #[arg(long, value_delimiter = ',', default_value = "gfs2")]
    pub events: Vec<String>,
    /// Kernel event filter (e.g. 'glnum == 72746'); events it does not apply to are not traced.
    #[arg(long)]
    pub filter: Option<String>,
    /// Stop after this many seconds (default: at Ctrl-C).
    #[arg(long, value_parser = clikit::args::seconds)]
    pub duration: Option<f64>,
    /// Write events here: .jsonl (JSON lines), .parquet (the events frame) or .txt (raw lines).
    /// Default: readable lines on stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Decode a saved trace_pipe / trace / `trace-cmd report` text (compressed or not) instead of tracing live.
    #[arg(long, short = 'i')]
    pub input: Vec<PathBuf>,
    /// Print counts per event type and per glock at the end (instead of the events, unless --output).
    #[arg(long)]
    pub summary: bool,
    /// Use this tracefs instance instead of a private `glk-PID` one (an existing instance
    /// is restored as found, never removed).
    #[arg(long)]
    pub instance: Option<String>,
    /// Per-CPU ring buffer size in KiB for the instance.
    #[arg(long)]
    pub buffer_kb: Option<u64>,
    /// How to read the live ring buffer: `raw` pages per CPU (`trace_pipe_raw`, the lines
    /// written by glk from the events' formats), `text` (the kernel's `trace_pipe`), or
    /// `auto`: raw when glk can print every traced event from its records, on a private
    /// instance.
    #[arg(long, value_enum, default_value_t = ReaderKind::Auto)]
    pub reader: ReaderKind,
}

/// How `glk trace` reads a live ring buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReaderKind {
    /// Raw pages when possible, else text.
    Auto,
    /// Raw pages per CPU, or an error saying why not.
    Raw,
    /// The kernel's `trace_pipe` text.
    Text,
}

/// What `--events` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventSel {
    AllGfs2,
    /// Every dlm event, where the kernel has them (5.16 and later, dlm module loaded).
    AllDlm,
    Gfs2(&'static str),
    Other {
        system: String,
        event: String,
    },
}

pub fn parse_events(list: &[String]) -> Result<Vec<EventSel>, String> {
    let mut out = Vec::new();
    for raw in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let sel = match raw {
            "gfs2" | "all" | "gfs2:*" => EventSel::AllGfs2,
            "dlm" | "dlm:*" => EventSel::AllDlm,
            _ => {
                let (system, event) = match raw.split_once(':') {
                    Some((s, e)) => (s, e),
                    None => ("gfs2", raw),
                };
                if system == "gfs2" {
                    let name = event.strip_prefix("gfs2_").unwrap_or(event);
                    match GFS2_EVENTS.iter().find(|e| **e == name) {
                        Some(e) => EventSel::Gfs2(e),
                        None => {
                            return Err(format!(
                                "unknown gfs2 event {raw:?}; gfs2 events are: {}",
                                GFS2_EVENTS.join(", ")
                            ))
                        }
                    }
                } else if system.is_empty() || event.is_empty() {
                    return Err(format!("bad event {raw:?}: use SYSTEM:EVENT"));
                } else {
                    EventSel::Other {
                        system: system.to_string(),
                        event: if event == "*" {
                            String::new()
                        } else {
                            event.to_string()
                        },
                    }
                }
            }
        };
        if !out.contains(&sel) {
            out.push(sel);
        }
    }
    if out.is_empty() {
        return Err("no events given".into());
    }
    Ok(out)
}

/// What a pass over trace lines counted (the whole pass, or one thread's share of it).
#[derive(Default)]
struct Tally {
    summary: Option<Summary>,
    diag: Diagnostics,
    gfs2: u64,
    dlm: u64,
    other: u64,
    undecoded: u64,
    lost_lines: traceparse::LostEvents,
}

impl Tally {
    fn new(summary: bool) -> Tally {
        Tally {
            summary: summary.then(Summary::default),
            ..Tally::default()
        }
    }

    /// Counts a decoded line.
    fn add(&mut self, d: &Decoded<'_>) {
        match d {
            Decoded::Gfs2 { .. } => self.gfs2 += 1,
            Decoded::Dlm { .. } => self.dlm += 1,
            Decoded::Other(_) => self.other += 1,
            Decoded::Undecoded(_) => self.undecoded += 1,
            Decoded::Lost { events, .. } => self.lost_lines.add(*events),
            Decoded::Header => self.diag.ignored += 1,
        }
        if let Some(s) = &mut self.summary {
            s.add(d);
        }
    }

    /// Adds another share's counts (its errors already carry true line numbers).
    fn merge(&mut self, o: Tally) {
        self.diag.merge(&o.diag);
        self.gfs2 += o.gfs2;
        self.dlm += o.dlm;
        self.other += o.other;
        self.undecoded += o.undecoded;
        self.lost_lines.merge(o.lost_lines);
        if let (Some(s), Some(os)) = (&mut self.summary, o.summary) {
            s.merge(os);
        }
    }

    fn events(&self) -> u64 {
        self.gfs2 + self.dlm + self.other + self.undecoded
    }
}

/// Decodes blocks of lines into the output and the tally.
struct Consumer {
    sink: Box<dyn TraceOut + Send>,
    tally: Tally,
    source: Arc<str>,
    /// Numbers and decodes the live trace's blocks.
    decoder: Decoder,
}

/// The [`Sink`] a consumer's decoder pushes into: the tally counts every line, the output
/// gets the ones that decode, the diagnostics the others with their numbers.
struct Feed<'a> {
    out: &'a mut (dyn TraceOut + Send),
    tally: &'a mut Tally,
    source: &'a Arc<str>,
}

impl Sink for Feed<'_> {
    fn line(&mut self, n: u64, raw: &[u8], d: Decoded<'_>) -> io::Result<bool> {
        self.tally.diag.lines = n;
        self.tally.add(&d);
        self.out.line(raw, &d)?;
        Ok(true)
    }

    fn bad_line(&mut self, n: u64, raw: &[u8], why: traceparse::line::BadLine) -> io::Result<bool> {
        self.tally.diag.lines = n;
        let e = ParseError::new(self.source, n, why.0.to_string(), raw);
        self.tally.diag.error(e);
        Ok(true)
    }
}

impl Consumer {
    fn feed(&mut self) -> Feed<'_> {
        Feed {
            out: self.sink.as_mut(),
            tally: &mut self.tally,
            source: &self.source,
        }
    }

    /// A block of the live trace.
    fn block(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut decoder = std::mem::take(&mut self.decoder);
        let r = decoder.block(buf, &mut self.feed());
        self.decoder = decoder;
        r
    }

    /// A saved trace file, its lines numbered from 1.
    fn file(&mut self, path: &Path) -> io::Result<()> {
        traceparse::sink::read_file(path, &mut self.feed()).map(drop)
    }

    fn report(&mut self, lost_in_buffer: Option<u64>, out: &mut impl Write) -> io::Result<()> {
        self.sink.finish()?;
        if let Some(s) = &mut self.tally.summary {
            s.settle();
            s.write_text(out, 20)?;
        }
        let t = &self.tally;
        out.flush()?;
        let mut msg = format!(
            "glk: {} events ({} gfs2, {}{} other)",
            t.events(),
            t.gfs2,
            if t.dlm > 0 {
                format!("{} dlm, ", t.dlm)
            } else {
                String::new()
            },
            t.other
        );
        if let Some(l) = lost_in_buffer {
            // The LOST lines report the buffer's own overruns again: the larger is right.
            let lost = traceparse::LostEvents {
                counted: l.max(t.lost_lines.counted),
                ..t.lost_lines
            };
            msg.push_str(&format!(", {lost} lost"));
        } else if t.lost_lines.any() {
            msg.push_str(&format!(
                ", {} lost (LOST lines in the input)",
                t.lost_lines
            ));
        }
        eprintln!("{msg}");
        if t.undecoded > 0 {
            eprintln!(
                "glk: warning: {} gfs2 or dlm events did not match any known format and are kept raw",
                t.undecoded
            );
        }
        clikit::diag::report(&t.diag);
        Ok(())
    }
}

fn consumer(args: &TraceArgs, source: &str) -> io::Result<Consumer> {
    let sink: Box<dyn TraceOut + Send> = match (&args.output, args.summary) {
        (Some(p), _) => sink::for_path(p)?,
        (None, true) => Box::new(sink::NullSink),
        (None, false) => Box::new(sink::LineSink::text(io::BufWriter::with_capacity(
            1 << 16,
            io::stdout(),
        ))),
    };
    Ok(Consumer {
        sink,
        tally: Tally::new(args.summary),
        source: source.into(),
        decoder: Decoder::new(),
    })
}

/// One thread's share of a parallel decode: its tally, and its first errors with the
/// chunk they are in (line numbers are fixed once every chunk is counted).
struct Share {
    tally: Tally,
    errors: Vec<(u64, ParseError)>,
}

/// Decodes a large saved trace on every core into a summary, for when nothing needs the
/// lines in order (no output file). `None` when the file is read sequentially instead.
fn decode_parallel(path: &Path, source: &Arc<str>) -> io::Result<Option<Tally>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let done = traceparse::parallel::for_each_line(
        path,
        threads,
        || Share {
            tally: Tally::new(true),
            errors: Vec::new(),
        },
        |share, pos, line| match decode_line(line) {
            Ok(d) => share.tally.add(&d),
            Err(e) => {
                share.tally.diag.errors += 1;
                if share.errors.len() < glockparse::diagnostics::KEPT_ERRORS {
                    let err = ParseError::new(source, pos.index + 1, e.0.to_string(), line);
                    share.errors.push((pos.chunk, err));
                }
            }
        },
    )
    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let Some((shares, map)) = done else {
        return Ok(None);
    };
    let mut total = Tally::new(true);
    let mut errors = Vec::new();
    for share in shares {
        errors.extend(share.errors.into_iter().map(|(chunk, mut e)| {
            e.line = map.line_number(traceparse::parallel::LinePos {
                chunk,
                index: e.line - 1,
            });
            e
        }));
        total.merge(share.tally);
    }
    // Each thread kept its first errors in file order; the file's first are among them.
    errors.sort_by_key(|e| e.line);
    errors.truncate(glockparse::diagnostics::KEPT_ERRORS);
    total.diag.first_errors = errors;
    total.diag.lines = map.lines();
    Ok(Some(total))
}

pub fn run(args: &TraceArgs) -> io::Result<()> {
    if !args.input.is_empty() {
        return offline(args);
    }
    let mut rec = live(args, true).map_err(io::Error::from)?;
    if let Some(s) = &mut rec.consumer.tally.summary {
        s.name(&bundle::live::named_filesystems(Path::new("/sys")));
    }
    rec.consumer
        .report(Some(rec.lost), &mut io::stdout().lock())?;
    if let Some(sig) = stop::signal() {
        eprintln!("glk: stopped by signal {sig}; tracing state restored");
    }
    Ok(())
}

/// Records `events` live for `secs` seconds (or until a stop signal) into `path`
/// (raw lines as read). Returns the events seen and the events lost.
pub fn record_raw(events: &[String], secs: f64, path: &std::path::Path) -> io::Result<(u64, u64)> {
    let args = TraceArgs {
        events: events.to_vec(),
        filter: None,
        duration: Some(secs),
        output: Some(path.to_path_buf()),
        input: Vec::new(),
        summary: false,
        instance: None,
        buffer_kb: None,
        reader: ReaderKind::Auto,
    };
    let mut rec = live(&args, false).map_err(io::Error::from)?;
    rec.consumer.sink.finish()?;
    let t = &rec.consumer.tally;
    Ok((t.events(), rec.lost.max(t.lost_lines.counted)))
}

/// What a live trace saw.
struct Recorded {
    consumer: Consumer,
    /// Events the instance lost (per-CPU overrun + dropped).
    lost: u64,
}

impl From<Failure> for io::Error {
    fn from(f: Failure) -> io::Error {
        match f {
            Failure::Trace(t) => io::Error::other(t.to_string()),
            Failure::Io(e) => e,
        }
    }
}

fn offline(args: &TraceArgs) -> io::Result<()> {
    for path in &args.input {
        bundle::live::refuse_trace_pipe(path)?;
    }
    let mut c = consumer(args, "")?;
    let mut unrecognised = Vec::new();
    for path in &args.input {
        c.source = path.display().to_string().into();
        let parallel = if args.output.is_none() && args.summary {
            decode_parallel(path, &c.source)?
        } else {
            None
        };
        let mut file = match parallel {
            Some(t) => t,
            None => {
                let was = std::mem::replace(&mut c.tally, Tally::new(args.summary));
                let read = c.file(path);
                let file = std::mem::replace(&mut c.tally, was);
                read?;
                file
            }
        };
        // Nothing but malformed lines: not a trace at all (said once the rest is done).
        if file.events() == 0 && !file.lost_lines.any() && file.diag.errors > 0 {
            let name = path.display().to_string();
            unrecognised.extend(file.diag.recognised(&name, "a trace").err());
        }
        if let Some(s) = &mut file.summary {
            s.name(&bundle::filesystems::beside_trace(path));
        }
        c.tally.merge(file);
    }
    c.report(None, &mut io::stdout().lock())?;
    if unrecognised.is_empty() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        unrecognised
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\nglk: "),
    ))
}

enum Failure {
    Trace(TraceError),
    Io(io::Error),
}

impl From<TraceError> for Failure {
    fn from(e: TraceError) -> Failure {
        Failure::Trace(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

/// Enables the selected events (and the filter) in `inst`; returns the (system, event)
/// pairs traced.
fn set_up(
    tfs: &Tracefs,
    inst: &mut Instance,
    args: &TraceArgs,
) -> Result<Vec<(String, String)>, Failure> {
    let sel = parse_events(&args.events).map_err(|m| Failure::Io(io::Error::other(m)))?;
    let wants_gfs2 = sel
        .iter()
        .any(|s| matches!(s, EventSel::AllGfs2 | EventSel::Gfs2(_)));
    if wants_gfs2 && !tfs.has_event("gfs2", None) {
        return Err(TraceError::NoGfs2.into());
    }
    let pairs = event_pairs(tfs, &sel)?;
    if let Some(kb) = args.buffer_kb {
        inst.set_buffer_kb(kb)?;
    }
    warn_unknown_formats(tfs, &pairs);
    let enabled = enable(inst, tfs, &pairs, args.filter.as_deref())?;
    enabled.report(args.filter.as_deref())?;
    Ok(pairs)
}

/// The (system, event) pairs the selection names, one per event so a filter can be set on
/// each; every one must exist.
fn event_pairs(tfs: &Tracefs, sel: &[EventSel]) -> Result<Vec<(String, String)>, Failure> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for s in sel {
        match s {
            EventSel::AllGfs2 => pairs.extend(
                tfs.system_events("gfs2")
                    .into_iter()
                    .map(|e| ("gfs2".to_string(), e)),
            ),
            EventSel::Gfs2(e) => pairs.push(("gfs2".into(), format!("gfs2_{e}"))),
            EventSel::AllDlm if !tfs.has_event("dlm", None) => eprintln!(
                "glk: warning: this kernel has no dlm tracepoints (they came with 5.16) or the \
                 dlm module is not loaded: tracing without them"
            ),
            EventSel::AllDlm => pairs.extend(
                tfs.system_events("dlm")
                    .into_iter()
                    .map(|e| ("dlm".to_string(), e)),
            ),
            EventSel::Other { system, event } if event.is_empty() => {
                if !tfs.has_event(system, None) {
                    return Err(TraceError::UnknownEvent(format!("{system}:*")).into());
                }
                pairs.extend(
                    tfs.system_events(system)
                        .into_iter()
                        .map(|e| (system.clone(), e)),
                );
            }
            EventSel::Other { system, event } => pairs.push((system.clone(), event.clone())),
        }
    }
    pairs.dedup();
    for (s, e) in &pairs {
        if !tfs.has_event(s, Some(e)) {
            return Err(if s == "gfs2" {
                TraceError::NoGfs2
            } else {
                TraceError::UnknownEvent(format!("{s}:{e}"))
            }
            .into());
        }
    }
    Ok(pairs)
}

/// Formats the decoder does not know are worth a warning before any event arrives.
fn warn_unknown_formats(tfs: &Tracefs, pairs: &[(String, String)]) {
    for (s, e) in pairs.iter().filter(|(s, _)| s == "gfs2") {
        let name = e.trim_start_matches("gfs2_");
        if let Some(f) = tfs
            .format(s, e)
            .as_deref()
            .and_then(traceparse::format::print_fmt)
        {
            if !traceparse::format::is_known(name, f) {
                eprintln!("glk: warning: {e} has a print format glk does not know: {f}");
            }
        }
    }
}

/// What enabling the events did: how many are traced, those always recorded, and the
/// filter's rejections grouped by the kernel's message (a bad expression is said once,
/// not once per event).
struct Enabled {
    traced: usize,
    always: Vec<String>,
    rejected: Vec<(String, Vec<String>)>,
}

/// Enables each event in the instance, with the filter when there is one.
fn enable(
    inst: &mut Instance,
    tfs: &Tracefs,
    pairs: &[(String, String)],
    filter: Option<&str>,
) -> Result<Enabled, Failure> {
    let mut traced = 0;
    let mut rejected: Vec<(String, Vec<String>)> = Vec::new();
    let mut always = Vec::new();
    for (s, e) in pairs {
        if !tfs.can_enable(s, e) {
            // ftrace's own events (ftrace:print) are always recorded and take no filter.
            always.push(format!("{s}:{e}"));
            traced += 1;
            continue;
        }
        inst.enable(s, e)?;
        if let Some(expr) = filter {
            if let Err(err) = inst.set_filter(s, e, expr) {
                inst.disable(s, e);
                let msg = match err {
                    TraceError::BadFilter { kernel, .. } => tracepipe::error::clean_log(&kernel),
                    other => return Err(other.into()),
                };
                match rejected.iter_mut().find(|(m, _)| *m == msg) {
                    Some((_, events)) => events.push(format!("{s}:{e}")),
                    None => rejected.push((msg, vec![format!("{s}:{e}")])),
                }
                continue;
            }
        }
        traced += 1;
    }
    Ok(Enabled {
        traced,
        always,
        rejected,
    })
}

impl Enabled {
    /// Says what is always recorded and what the kernel rejected; an error when nothing
    /// can be traced.
    fn report(&self, filter: Option<&str>) -> Result<(), Failure> {
        let Enabled {
            traced,
            always,
            rejected,
        } = self;
        if !always.is_empty() {
            eprintln!(
                "glk: {} always recorded (ftrace's own events have no switch{})",
                always.join(", "),
                if filter.is_some() {
                    " and take no filter"
                } else {
                    ""
                }
            );
        }
        let names = |events: &[String]| match events.len() {
            1..=4 => events.join(", "),
            n => format!("{}, … ({n} events)", events[..3].join(", ")),
        };
        if *traced == 0 {
            let expr = filter.unwrap_or("");
            return Err(match rejected.as_slice() {
                [(msg, events)] => Failure::Io(io::Error::other(format!(
                    "the kernel rejected the filter {expr:?} for {}:\n{msg}",
                    names(events)
                ))),
                [] => Failure::Io(io::Error::other("no events to trace")),
                many => Failure::Io(io::Error::other(format!(
                    "the kernel rejected the filter {expr:?} for every event:\n{}",
                    many.iter()
                        .map(|(m, ev)| format!("{}:\n{m}", names(ev)))
                        .collect::<Vec<_>>()
                        .join("\n")
                ))),
            });
        }
        for (msg, events) in rejected {
            eprintln!(
                "glk: warning: not tracing {}: the kernel rejected the filter:\n{msg}",
                names(events)
            );
        }
        Ok(())
    }
}

/// Writes the clock markers `glk analyze` aligns nodes with: `glkmark LABEL node=HOST
/// wall=SECS.NANOS clock=CLOCK`, the wall clock read just before the write (a lower bound
/// of the wall-clock time of the marker's timestamp), then `glkmark LABEL.bound node=HOST
/// wall=SECS.NANOS`, the wall clock read once the first write returned (an upper bound).
/// A marker that cannot be written costs the alignment, not the trace: a warning.
fn mark(inst: &Instance, label: &str, clock: Option<&str>) {
    let node = hostname();
    let wall = || clikit::fmt::unix_nanos(std::time::SystemTime::now());
    let before = wall();
    let first = format!(
        "glkmark {label} node={node} wall={}.{:09} clock={}\n",
        before / 1_000_000_000,
        before % 1_000_000_000,
        clock.unwrap_or("unknown")
    );
    let r = inst.write_marker(&first).and_then(|()| {
        let after = wall();
        inst.write_marker(&format!(
            "glkmark {label}.bound node={node} wall={}.{:09}\n",
            after / 1_000_000_000,
            after % 1_000_000_000
        ))
    });
    if let Err(e) = r {
        eprintln!("glk: warning: could not write the {label} clock marker: {e}");
    }
}

/// The instance to trace in: the one named, or a private `glk-PID` one (removing those
/// that killed glk left behind, and saying so).
fn instance(tfs: &Tracefs, named: Option<&str>) -> Result<Instance, Failure> {
    if let Some(name) = named {
        return Ok(Instance::open(tfs, name)?);
    }
    let (inst, removed) = Instance::private(tfs)?;
    for name in removed {
        eprintln!(
            "glk: removed tracefs instance {name}, left behind by a glk that was killed \
             (its events had been recorded into its buffer until now)"
        );
    }
    Ok(inst)
}

fn live(args: &TraceArgs, show_progress: bool) -> Result<Recorded, Failure> {
    stop::install();
    if !tracepipe::tracefs::is_root() {
        return Err(TraceError::Permission(
            "live tracing needs root (or use --input FILE to decode a saved trace)".into(),
        )
        .into());
    }
    let tfs = Tracefs::locate(true)?;
    let mut inst = instance(&tfs, args.instance.as_deref())?;
    let pairs = set_up(&tfs, &mut inst, args)?;
    let prefer = match args.reader {
        ReaderKind::Auto => Prefer::Auto,
        ReaderKind::Raw => Prefer::Raw,
        ReaderKind::Text => Prefer::Text,
    };
    let LiveReader {
        reader,
        tally,
        source,
    } = tracepipe::raw::live_reader(&tfs, &inst, &pairs, prefer, args.instance.is_none())?;
    let mut c = consumer(args, &source)?;
    inst.tracing_on()?;
    let clock = inst.trace_clock();
    mark(&inst, "start", clock.as_deref());
    let started = Instant::now();
    let deadline = args
        .duration
        .map(|d| started + Duration::from_secs_f64(d.max(0.0)));
    let progress = show_progress && io::stderr().is_terminal();
    let mut last_progress = Instant::now();
    let mut stopping = false;
    let mut result = Ok(());
    loop {
        let want_stop = stop::requested() || deadline.is_some_and(|d| Instant::now() >= d);
        if want_stop && !stopping {
            stopping = true;
            mark(&inst, "end", clock.as_deref());
            inst.tracing_off();
            reader.drain();
        }
        match reader.next_block_timeout(Duration::from_millis(100)) {
            Next::Block(b) => {
                let r = c.block(&b);
                reader.recycle(b);
                if let Err(e) = r {
                    // A closed stdout ends the trace quietly; anything else is reported.
                    if e.kind() != io::ErrorKind::BrokenPipe {
                        result = Err(e);
                    }
                    break;
                }
            }
            Next::Idle => {}
            Next::Done => break,
        }
        if progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            let secs = started.elapsed().as_secs_f64();
            eprint!(
                "\r{} events, {:.0}/s, {} lost   ",
                c.tally.events(),
                c.tally.events() as f64 / secs,
                inst.losses().total() + c.tally.lost_lines.counted
            );
        }
    }
    if progress {
        eprint!("\r");
    }
    inst.tracing_off();
    let read = reader.finish();
    if let Some(t) = &tally {
        for w in t.lock().unwrap_or_else(|e| e.into_inner()).warnings() {
            eprintln!("glk: warning: {w}");
        }
    }
    let losses = inst.losses();
    inst.close()?;
    if let Some(w) = tfs.release().warning() {
        eprintln!("glk: warning: {w}");
    }
    result?;
    read?;
    Ok(Recorded {
        consumer: c,
        lost: losses.total(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lists() {
        let v = |s: &str| parse_events(&s.split(',').map(str::to_string).collect::<Vec<_>>());
        assert_eq!(v("gfs2").unwrap(), vec![EventSel::AllGfs2]);
        assert_eq!(
            v("glock_state_change,gfs2_demote_rq,gfs2:promote").unwrap(),
            vec![
                EventSel::Gfs2("glock_state_change"),
                EventSel::Gfs2("demote_rq"),
                EventSel::Gfs2("promote")
            ]
        );
        assert_eq!(
            v("sched:sched_switch,block:*").unwrap(),
            vec![
                EventSel::Other {
                    system: "sched".into(),
                    event: "sched_switch".into()
                },
                EventSel::Other {
                    system: "block".into(),
                    event: String::new()
                }
            ]
        );
        assert!(v("glock_bogus").unwrap_err().contains("glock_state_change"));
        assert!(v("sched:").is_err());
        assert_eq!(v("all,gfs2").unwrap(), vec![EventSel::AllGfs2]);
        assert_eq!(
            v("gfs2,dlm,dlm:*").unwrap(),
            vec![EventSel::AllGfs2, EventSel::AllDlm]
        );
    }
}
