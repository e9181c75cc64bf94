//! Binary trace records: the kernel's ring-buffer pages ([`page`]), the events' format
//! files ([`format`](mod@format)) and their print formats ([`print`](mod@print)), turned
//! into the very lines `trace_pipe` would have printed ([`Lines`]), so that one text
//! decoder serves both.
//!
//! Reading `trace_pipe_raw` instead of `trace_pipe` moves the formatting of every event
//! out of the kernel's single `trace_pipe` reader: pages are copied per CPU, and the
//! lines are written here. Every event's print format must be understood for that
//! ([`print::Printer`]); when one is not, the caller reads `trace_pipe`.

pub mod datfile;
pub mod format;
pub mod page;
pub mod print;

use std::io::Write as _;

pub use format::{EventFormat, Field};
pub use page::{Page, PageLayout, Record};
pub use print::{Printer, Unsupported};

/// The names gfs2's trace formats leave unresolved (no `TRACE_DEFINE_ENUM`), as values:
/// `GLF_*` as its bit ([`glockparse::flags::glf_bit`]; the formats shift it themselves), and
/// `WB_SYNC_*` (include/linux/writeback.h). A name not known is `None`, and such a format
/// is not printed from raw records.
pub fn gfs2_symbols(name: &str) -> Option<u64> {
    match name {
        "WB_SYNC_NONE" => Some(0),
        "WB_SYNC_ALL" => Some(1),
        _ => glockparse::flags::glf_bit(name).map(u64::from),
    }
}

/// How an event's body is written.
#[derive(Debug, Clone)]
enum How {
    /// By its print format.
    Print(Printer),
    /// `ftrace:print`, a `trace_marker` write: `tracing_mark_write: TEXT`.
    Marker(usize),
    /// A system call's entry, `sys_NAME(arg: hex, …)` (kernel/trace/trace_syscalls.c).
    SyscallEnter {
        /// `sys_NAME`.
        call: Vec<u8>,
        /// The arguments' names and fields.
        args: Vec<(Vec<u8>, usize)>,
    },
    /// A system call's return, `sys_NAME -> 0xRET`.
    SyscallExit {
        /// `sys_NAME`.
        call: Vec<u8>,
        /// The `ret` field.
        ret: usize,
    },
}

#[derive(Debug, Clone)]
struct Known {
    /// The name the line prints.
    name: Vec<u8>,
    fields: Vec<Field>,
    how: How,
    /// `common_flags`, `common_preempt_count`, `common_pid`.
    flags: Option<usize>,
    preempt: Option<usize>,
    pid: Option<usize>,
}

impl Known {
    /// Writes the event's body (its name first, for the events that print one).
    fn body(&self, data: &[u8], out: &mut Vec<u8>) {
        match &self.how {
            How::SyscallEnter { call, args } => {
                out.extend_from_slice(call);
                out.push(b'(');
                for (n, (name, i)) in args.iter().enumerate() {
                    if n > 0 {
                        out.extend_from_slice(b", ");
                    }
                    out.extend_from_slice(name);
                    let _ = write!(out, ": {:x}", self.fields[*i].int(data).unwrap_or(0));
                }
                out.push(b')');
            }
            How::SyscallExit { call, ret } => {
                out.extend_from_slice(call);
                let _ = write!(out, " -> 0x{:x}", self.fields[*ret].int(data).unwrap_or(0));
            }
            How::Marker(buf) => {
                out.extend_from_slice(&self.name);
                out.extend_from_slice(b": ");
                let text = self.fields[*buf].string(data).unwrap_or_default();
                out.extend_from_slice(text.strip_suffix(b"\n").unwrap_or(text));
            }
            How::Print(p) => {
                out.extend_from_slice(&self.name);
                out.extend_from_slice(b": ");
                p.print(&self.fields, data, out);
            }
        }
    }
}

/// The `PID COMM` lines of tracefs `saved_cmdlines` (a trace.dat keeps the same text):
/// each pid and its command name; lines that are not one are left out.
pub fn saved_cmdlines(text: &[u8]) -> impl Iterator<Item = (i32, &[u8])> {
    text.split(|b| *b == b'\n').filter_map(|line| {
        let sp = memchr::memchr(b' ', line)?;
        let pid = std::str::from_utf8(&line[..sp]).ok()?.trim().parse().ok()?;
        Some((pid, &line[sp + 1..]))
    })
}

/// Whether the trace clock `clock` counts nanoseconds (kernel/trace/trace.c `in_ns`):
/// all but `counter`, `uptime` and `x86-tsc`, whose times print as plain counts.
pub fn counts_nanoseconds(clock: &str) -> bool {
    !matches!(clock, "counter" | "uptime" | "x86-tsc")
}

/// Where the task names come from: the kernel's `saved_cmdlines`, as `trace_pipe` takes
/// them.
pub trait Comms {
    /// The command name of `pid`, `None` when the kernel did not save it (printed `<...>`).
    fn comm(&mut self, pid: i32) -> Option<&[u8]>;
}

/// Task names held in a table: those a trace.dat saved, or any fixed set.
impl Comms for std::collections::HashMap<i32, Vec<u8>> {
    fn comm(&mut self, pid: i32) -> Option<&[u8]> {
        self.get(&pid).map(Vec::as_slice)
    }
}

/// The kernel release whose lines are written (major, minor): its irq-info columns
/// (4 before 5.13, then 5 with the migrate-disable depth) and how it prints system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Release(pub u32, pub u32);

impl Release {
    /// The release of a `uname -r` text (`6.12.117+deb13-amd64`, `4.18.0-553.el8_10`).
    pub fn parse(text: &str) -> Option<Release> {
        let mut parts = text.trim().split(['.', '-', '+']);
        Some(Release(
            parts.next()?.parse().ok()?,
            parts.next()?.parse().ok()?,
        ))
    }
}

/// A kernel release from `text`'s first word, or from `uname -a`'s third (`Linux HOST
/// RELEASE ...`): printable ASCII without spaces, at most 128 bytes.
pub fn kernel_release(text: &str) -> Option<String> {
    let mut words = text.split_ascii_whitespace();
    let first = words.next()?;
    let release = if first == "Linux" {
        words.nth(1)?
    } else {
        first
    };
    (release.len() <= 128 && release.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| release.to_string())
}

/// The events a trace may hold, by id, and how each is printed as a line.
#[derive(Debug, Clone)]
pub struct Lines {
    by_id: Vec<Option<Known>>,
    release: Release,
    /// Whether lines carry the irq-info columns.
    irq_info: bool,
    /// The trace clock counts nanoseconds (printed `secs.micros`), or is a counter.
    counter_clock: bool,
}

/// A record whose event is not in the table, or too short for its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRecord {
    /// Its `common_type`.
    pub id: u16,
}

impl Lines {
    /// An empty table for kernel `release`, whose lines carry the irq-info columns when
    /// `irq_info` (tracefs' default), with a clock counting nanoseconds unless
    /// `counter_clock`.
    pub fn new(release: Release, irq_info: bool, counter_clock: bool) -> Lines {
        Lines {
            by_id: Vec::new(),
            release,
            irq_info,
            counter_clock,
        }
    }

    /// Adds the event `format` of `system`. An event whose body cannot be printed from
    /// its record is an error naming what is missing.
    pub fn add(
        &mut self,
        system: &str,
        format: &EventFormat,
        symbols: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<(), Unsupported> {
        let idx = |name: &str| format.field(name).map(|(i, _)| i);
        let how = match (system, format.name.as_str()) {
            ("ftrace", "print") => How::Marker(
                idx("buf").ok_or_else(|| Unsupported("ftrace:print has no buf".into()))?,
            ),
            ("ftrace", other) => {
                return Err(Unsupported(format!(
                    "ftrace:{other} is printed by the kernel's own code"
                )))
            }
            // 6.18 prints each argument by its type (an int's -100 as 0xffffff9c).
            ("syscalls", _) if self.release >= Release(6, 18) => {
                return Err(Unsupported(format!(
                    "syscalls:{}: system call events print their arguments by type from 6.18",
                    format.name
                )))
            }
            ("syscalls", name) if name.starts_with("sys_enter_") => How::SyscallEnter {
                call: format!("sys_{}", &name["sys_enter_".len()..]).into_bytes(),
                args: format
                    .fields
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| !f.name.starts_with("common_") && f.name != "__syscall_nr")
                    .map(|(i, f)| (f.name.clone().into_bytes(), i))
                    .collect(),
            },
            ("syscalls", name) if name.starts_with("sys_exit_") => How::SyscallExit {
                call: format!("sys_{}", &name["sys_exit_".len()..]).into_bytes(),
                ret: idx("ret").ok_or_else(|| Unsupported(format!("{name} has no ret")))?,
            },
            _ => How::Print(Printer::compile(format, symbols)?),
        };
        let name = match how {
            How::Marker(_) => b"tracing_mark_write".to_vec(),
            _ => format.name.clone().into_bytes(),
        };
        let id = usize::from(format.id);
        if self.by_id.len() <= id {
            self.by_id.resize(id + 1, None);
        }
        self.by_id[id] = Some(Known {
            name,
            fields: format.fields.clone(),
            how,
            flags: idx("common_flags"),
            preempt: idx("common_preempt_count"),
            pid: idx("common_pid"),
        });
        Ok(())
    }

    /// Writes `rec` of CPU `cpu` as `trace_pipe` prints it, with its newline.
    pub fn line(
        &self,
        cpu: u32,
        rec: &Record<'_>,
        comms: &mut dyn Comms,
        out: &mut Vec<u8>,
    ) -> Result<(), UnknownRecord> {
        let data = rec.data;
        let id = data
            .get(..2)
            .map_or(u16::MAX, |b| u16::from_le_bytes([b[0], b[1]]));
        let Some(Some(k)) = self.by_id.get(usize::from(id)) else {
            return Err(UnknownRecord { id });
        };
        let common = |i: Option<usize>| i.and_then(|i| k.fields[i].int(data)).unwrap_or(0);
        let pid = common(k.pid) as i64 as i32;
        let comm: &[u8] = match pid {
            0 => b"<idle>",
            p if p < 0 => b"<XXX>",
            p => comms.comm(p).unwrap_or(b"<...>"),
        };
        pad_left(out, comm, 16);
        out.push(b'-');
        // The pid's column widened from 5 to 7 in 5.10.
        let width = if self.release >= Release(5, 10) { 7 } else { 5 };
        let start = out.len();
        push_dec(out, i64::from(pid).unsigned_abs(), 0, pid < 0);
        out.resize(out.len().max(start + width), b' ');
        out.extend_from_slice(b" [");
        push_dec(out, u64::from(cpu), 3, false);
        out.extend_from_slice(b"] ");
        if self.irq_info {
            lat_columns(
                out,
                common(k.flags) as u8,
                common(k.preempt) as u8,
                self.release,
            );
        }
        if self.counter_clock {
            let _ = write!(out, " {:>12}: ", rec.ts);
        } else {
            let us = rec.ts.saturating_add(500) / 1000;
            let secs = us / 1_000_000;
            out.push(b' ');
            if secs < 10_000 {
                let w = 5 - decimal_len(secs);
                out.resize(out.len() + w, b' ');
            }
            push_dec(out, secs, 0, false);
            out.push(b'.');
            push_dec(out, us % 1_000_000, 6, false);
            out.extend_from_slice(b": ");
        }
        k.body(data, out);
        out.push(b'\n');
        Ok(())
    }
}

/// What [`Lines::write_pages`] met besides events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageTally {
    /// Events written as lines.
    pub events: u64,
    /// Records of events not in the table (ids), not written.
    pub unknown: Vec<u16>,
    /// Records of unknown events, in all.
    pub unknown_records: u64,
    /// Pages that could not be read to their end, and the first reason.
    pub bad_pages: u64,
    /// Why the first bad page was bad.
    pub first_bad: Option<String>,
}

impl Lines {
    /// Writes the records of `pages` (each with its CPU; a CPU's pages in the order read)
    /// as `trace_pipe`'s lines, all CPUs merged in time order, as `trace_pipe` merges
    /// them. Lost events a page announces come first as `CPU:N [LOST M EVENTS]` (`CPU:N
    /// [LOST EVENTS]` when it does not say how many).
    pub fn write_pages(
        &self,
        pages: &[(u32, &[u8])],
        layout: PageLayout,
        comms: &mut dyn Comms,
        out: &mut Vec<u8>,
        tally: &mut PageTally,
    ) {
        enum Item<'a> {
            Lost(u32, Option<u64>),
            Rec(u32, Record<'a>),
        }
        let mut items: Vec<(u64, Item<'_>)> = Vec::new();
        for &(cpu, bytes) in pages {
            let (lost, records) = tally.read_page(cpu, bytes, layout);
            if let Some((ts, n)) = lost {
                items.push((ts, Item::Lost(cpu, n)));
            }
            items.extend(records.into_iter().map(|r| (r.ts, Item::Rec(cpu, r))));
        }
        // Stable: a CPU's records keep their order among equal times.
        items.sort_by_key(|(ts, _)| *ts);
        for (_, item) in &items {
            match item {
                Item::Lost(cpu, n) => write_lost(out, *cpu, *n),
                Item::Rec(cpu, rec) => tally.count(self.line(*cpu, rec, comms, out)),
            }
        }
    }
}

/// `CPU:N [LOST M EVENTS]`, as `trace_pipe` says a CPU's lost events, or `CPU:N [LOST
/// EVENTS]` as the kernel says a loss whose size it does not know.
pub fn write_lost(out: &mut Vec<u8>, cpu: u32, events: Option<u64>) {
    let _ = match events {
        Some(n) => writeln!(out, "CPU:{cpu} [LOST {n} EVENTS]"),
        None => writeln!(out, "CPU:{cpu} [LOST EVENTS]"),
    };
}

impl PageTally {
    /// Counts what [`Lines::line`] did with a record: an event written, or a record of an
    /// unknown event left out.
    pub fn count(&mut self, written: Result<(), UnknownRecord>) {
        match written {
            Ok(()) => self.events += 1,
            Err(UnknownRecord { id }) => {
                self.unknown_records += 1;
                if !self.unknown.contains(&id) {
                    self.unknown.push(id);
                }
            }
        }
    }

    /// The records of the page `bytes` of CPU `cpu`, and whether it says events were lost
    /// before it (with the page's time, and how many when it says it); what cannot be read
    /// is counted here.
    pub fn read_page<'a>(
        &mut self,
        cpu: u32,
        bytes: &'a [u8],
        layout: PageLayout,
    ) -> (Option<(u64, Option<u64>)>, Vec<Record<'a>>) {
        let page = match Page::parse(bytes, layout) {
            Ok(p) => p,
            Err(e) => {
                self.bad(cpu, e);
                return (None, Vec::new());
            }
        };
        // A stored count of 0 is no loss (the kernel stores none then).
        let lost = match page.missed {
            page::Missed::None | page::Missed::Count(0) => None,
            page::Missed::Count(n) => Some((page.time_stamp, Some(n))),
            page::Missed::Some => Some((page.time_stamp, None)),
        };
        let mut records = Vec::new();
        for r in page.records() {
            match r {
                Ok(rec) => records.push(rec),
                Err(e) => self.bad(cpu, e),
            }
        }
        (lost, records)
    }

    /// What was met besides events, as sentences (none when only events were met).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.unknown_records > 0 {
            out.push(format!(
                "{} records of events glk has no format for (ids {:?}) were not written",
                self.unknown_records, self.unknown
            ));
        }
        if self.bad_pages > 0 {
            out.push(format!(
                "{} ring-buffer pages could not be read to their end: {}",
                self.bad_pages,
                self.first_bad.as_deref().unwrap_or("")
            ));
        }
        out
    }

    fn bad(&mut self, cpu: u32, e: page::BadPage) {
        self.bad_pages += 1;
        self.first_bad.get_or_insert(format!("cpu {cpu}: {e}"));
    }
}

/// Writes `v` in decimal, zero-padded to `zeros` digits, after a `-` when `neg`.
#[inline]
fn push_dec(out: &mut Vec<u8>, v: u64, zeros: usize, neg: bool) {
    let mut d = [0u8; 24];
    let n = print::decimal_digits(v, &mut d);
    if neg {
        out.push(b'-');
    }
    out.resize(out.len() + zeros.saturating_sub(n), b'0');
    out.extend(d[..n].iter().rev());
}

/// How many decimal digits `v` has.
fn decimal_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

fn pad_left(out: &mut Vec<u8>, s: &[u8], width: usize) {
    out.resize(out.len() + width.saturating_sub(s.len()), b' ');
    out.extend_from_slice(s);
}

/// trace_print_lat_fmt(): irqs-off, need-resched, hard/soft irq, preempt depth and (from
/// 5.13) migrate-disable depth (docs/kernel-formats.md §4.5).
fn lat_columns(out: &mut Vec<u8>, flags: u8, preempt: u8, release: Release) {
    const IRQS_OFF: u8 = 0x01;
    /// IRQS_NOSUPPORT before 6.13, then NEED_RESCHED_LAZY.
    const BIT1: u8 = 0x02;
    const NEED_RESCHED: u8 = 0x04;
    const HARDIRQ: u8 = 0x08;
    const SOFTIRQ: u8 = 0x10;
    const PREEMPT_RESCHED: u8 = 0x20;
    const NMI: u8 = 0x40;
    const BH_OFF: u8 = 0x80;
    let irqs_off = flags & IRQS_OFF != 0;
    let bh_off = flags & BH_OFF != 0;
    let lazy_kernel = release >= Release(6, 13);
    out.push(match (irqs_off, bh_off) {
        (true, true) => b'D',
        (true, false) => b'd',
        (false, true) => b'b',
        _ if !lazy_kernel && flags & BIT1 != 0 => b'X',
        _ => b'.',
    });
    let lazy = lazy_kernel && flags & BIT1 != 0;
    out.push(
        match (
            flags & NEED_RESCHED != 0,
            lazy,
            flags & PREEMPT_RESCHED != 0,
        ) {
            (true, true, true) => b'B',
            (true, false, true) => b'N',
            (false, true, true) => b'L',
            (true, true, false) => b'b',
            (true, false, false) => b'n',
            (false, false, true) => b'p',
            (false, true, false) => b'l',
            _ => b'.',
        },
    );
    let (nmi, hard, soft) = (flags & NMI != 0, flags & HARDIRQ != 0, flags & SOFTIRQ != 0);
    out.push(match (nmi, hard, soft) {
        (true, true, _) => b'Z',
        (true, false, _) => b'z',
        (false, true, true) => b'H',
        (false, true, false) => b'h',
        (false, false, true) => b's',
        _ => b'.',
    });
    let digit = |n: u8| {
        if n == 0 {
            b'.'
        } else {
            b"0123456789abcdef"[usize::from(n & 15)]
        }
    };
    if release < Release(5, 13) {
        out.push(digit(preempt));
    } else {
        out.push(digit(preempt & 0xf));
        out.push(digit(preempt >> 4));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_from_osrelease_and_uname() {
        assert_eq!(
            kernel_release("6.1.0-56-amd64\n").as_deref(),
            Some("6.1.0-56-amd64")
        );
        assert_eq!(
            kernel_release("Linux n1 5.14.0-427.el9.x86_64 #1 SMP x86_64 GNU/Linux").as_deref(),
            Some("5.14.0-427.el9.x86_64")
        );
        assert_eq!(kernel_release(""), None);
        assert_eq!(kernel_release("Linux"), None);
        assert_eq!(kernel_release("6.1\x1b[2J"), None);
        assert_eq!(kernel_release(&"9".repeat(200)), None);
    }
}
