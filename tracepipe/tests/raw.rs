//! The raw reader held to the kernel's own text: the same events, read once through the
//! instance's `trace` file (the kernel's formatting, which leaves the buffer as it is)
//! and then consumed as raw pages through `trace_pipe_raw`, give the same lines.

use std::process::Command;

use traceparse::raw::PageTally;
use tracepipe::raw::{RawPipes, RawSetup, SavedCmdlines};
use tracepipe::{Instance, Tracefs};

mod common;

/// The kernel's lines of the `trace` file, without its `#` header.
fn kernel_lines(inst: &Instance) -> Vec<String> {
    let text = std::fs::read(inst.dir().join("trace")).unwrap();
    String::from_utf8_lossy(&text)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Consumes the instance's pages and writes them as lines.
fn raw_lines(
    tfs: &Tracefs,
    inst: &Instance,
    events: &[(String, String)],
) -> (Vec<String>, PageTally) {
    let setup = RawSetup::new(tfs, events, inst.trace_clock().as_deref()).unwrap();
    let mut pipes = RawPipes::open(inst, setup.layout.page_size).unwrap();
    let mut pages = Vec::new();
    let mut spare = Vec::new();
    while pipes
        .read_available(&mut pages, &mut spare, usize::MAX)
        .unwrap()
        > 0
    {}
    let refs: Vec<(u32, &[u8])> = pages.iter().map(|p| (p.cpu, p.bytes.as_slice())).collect();
    let mut out = Vec::new();
    let mut tally = PageTally::default();
    let mut comms = SavedCmdlines::new(tfs);
    setup
        .lines
        .write_pages(&refs, setup.layout, &mut comms, &mut out, &mut tally);
    let lines = String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_string)
        .collect();
    (lines, tally)
}

#[test]
fn raw_pages_print_as_the_kernel_prints_them() {
    let Some((_serial, tfs)) = common::tracefs("raw_pages_print_as_the_kernel_prints_them") else {
        return;
    };
    let mut inst = Instance::open(&tfs, &format!("glk-test-raw-{}", std::process::id())).unwrap();
    inst.set_buffer_kb(4096).unwrap();
    // Events with print formats of every shape: strings, flags in a conditional
    // (sched_switch's prev_state), system calls (printed by the kernel's own code),
    // arrays (raw_syscalls' args), and trace_marker's text.
    let events: Vec<(String, String)> = [
        ("sched", "sched_switch"),
        ("sched", "sched_wakeup"),
        ("sched", "sched_process_exec"),
        ("sched", "sched_process_fork"),
        ("sched", "sched_process_exit"),
        ("syscalls", "sys_enter_getppid"),
        ("syscalls", "sys_exit_getppid"),
        ("syscalls", "sys_enter_openat"),
        ("raw_syscalls", "sys_enter"),
    ]
    .iter()
    .filter(|(s, e)| tfs.has_event(s, Some(e)))
    .map(|(s, e)| (s.to_string(), e.to_string()))
    .filter(|(s, e)| {
        // From 6.18 the kernel prints system calls' arguments by type: refused, by name.
        let alone = [(s.clone(), e.clone())];
        match RawSetup::new(&tfs, &alone, None) {
            Ok(_) => true,
            Err(why) => {
                assert!(s == "syscalls" && why.contains("6.18"), "{s}:{e}: {why}");
                false
            }
        }
    })
    .collect();
    for (s, e) in &events {
        inst.enable(s, e).unwrap();
    }
    // getppid only: raw_syscalls:sys_enter would otherwise record every call.
    inst.set_filter("raw_syscalls", "sys_enter", "id == 110")
        .unwrap();
    inst.tracing_on().unwrap();
    for i in 0..200 {
        // SAFETY: getppid(2) has no preconditions.
        unsafe { libc::getppid() };
        if i % 50 == 0 {
            Command::new("true").status().unwrap();
            let _ = std::fs::File::open("/proc/self/status");
        }
        inst.write_marker(&format!("glk raw {i} \u{e9}\t%s"))
            .unwrap();
    }
    inst.tracing_off();
    let kernel = kernel_lines(&inst);
    let (ours, tally) = raw_lines(&tfs, &inst, &events);
    assert_eq!(tally.bad_pages, 0, "{:?}", tally.first_bad);
    assert_eq!(tally.unknown_records, 0, "ids {:?}", tally.unknown);
    assert!(kernel.len() > 400, "only {} events", kernel.len());
    let mut expected = vec![
        "sched_switch",
        "NR 110",
        "tracing_mark_write",
        "sched_process_exec",
    ];
    if events.iter().any(|(s, _)| s == "syscalls") {
        expected.push("sys_getppid()");
    }
    for name in expected {
        assert!(kernel.iter().any(|l| l.contains(name)), "no {name} traced");
    }
    // The same lines; equal times on two CPUs may come in either order.
    let (mut k, mut o) = (kernel.clone(), ours.clone());
    k.sort();
    o.sort();
    let first_diff = k.iter().zip(&o).find(|(a, b)| a != b);
    assert!(
        first_diff.is_none() && k.len() == o.len(),
        "{} kernel lines, {} ours; first difference:\n{first_diff:?}",
        k.len(),
        o.len()
    );
    inst.close().unwrap();
}

/// Runs `f` on CPU `cpu` alone (the thread's affinity), so that its events go to that
/// CPU's buffer; the affinity is put back after.
fn on_cpu<T>(cpu: usize, f: impl FnOnce() -> T) -> T {
    // SAFETY: a zeroed cpu_set_t is an empty set; the calls only read and write `set`
    // and `was`, which live for the calls.
    unsafe {
        let mut was: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of_val(&was), &mut was),
            0
        );
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
            0
        );
        let out = f();
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&was), &was),
            0
        );
        out
    }
}

/// A buffer overrun while nothing reads it: the raw reader's `CPU:0 [LOST N EVENTS]`
/// lines say the kernel's own count (`per_cpu/cpu0/stats` `overrun`), and the events that
/// stayed are the last ones written, whole.
#[test]
fn an_overrun_buffer_says_the_kernels_count() {
    let test = "an_overrun_buffer_says_the_kernels_count";
    let Some((_serial, tfs)) = common::tracefs(test) else {
        return;
    };
    let mut inst = Instance::open(&tfs, &format!("glk-test-lost-{}", std::process::id())).unwrap();
    // The smallest buffer: a few pages per CPU.
    inst.set_buffer_kb(4).unwrap();
    let events = [("ftrace".to_string(), "print".to_string())];
    inst.tracing_on().unwrap();
    let written = 5000;
    on_cpu(0, || {
        for i in 0..written {
            inst.write_marker(&format!("glk lost {i:05}")).unwrap();
        }
    });
    inst.tracing_off();
    let overrun = inst.losses().overrun;
    assert!(overrun > 0, "5000 markers did not overrun 4 KiB");
    let (lines, tally) = raw_lines(&tfs, &inst, &events);
    assert_eq!(tally.bad_pages, 0, "{:?}", tally.first_bad);
    let mut lost = traceparse::LostEvents::default();
    let mut kept = Vec::new();
    for l in &lines {
        match traceparse::decode_line(l.as_bytes()) {
            Ok(traceparse::Decoded::Lost { cpu, events }) => {
                assert_eq!(cpu, 0, "{l}");
                lost.add(events);
            }
            Ok(traceparse::Decoded::Other(t)) => kept.push(t.body.to_vec()),
            other => panic!("{l}: {other:?}"),
        }
    }
    // The kernel stores the count in the page when it has room; else it says only that
    // events were lost, and trace-cmd as glk then print no number.
    assert!(lost.any(), "no LOST line for {overrun} overwritten events");
    if lost.uncounted == 0 {
        assert_eq!(lost.counted, overrun);
    } else {
        assert!(lost.counted < overrun, "{lost:?} of {overrun}");
    }
    // What stayed: the last markers, in order, none missing between.
    let numbers: Vec<u64> = kept
        .iter()
        .map(|b| {
            let s = String::from_utf8_lossy(b);
            s.trim_start_matches("glk lost ").trim().parse().unwrap()
        })
        .collect();
    assert!(!numbers.is_empty());
    assert_eq!(*numbers.last().unwrap(), written - 1);
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    assert_eq!(numbers.len() as u64 + overrun, written);
    inst.close().unwrap();
}
