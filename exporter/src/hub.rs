//! Runs the collectors and keeps their last collection: each collector on a thread of its
//! own, asked to collect and waited for until a deadline; one collection at a time, which
//! every scrape within the minimum interval is served from.
//!
//! A collector that misses the deadline (a debugfs read stuck in the kernel, a hung
//! corosync) makes that collection of it a failure; the scrape does not wait for it. It
//! is not asked again until it answers, so a stuck source holds one thread, never more.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use analysis::findings::FindingCode;

use crate::collect::{Collected, Collector};
use crate::exposition::Family;
use crate::metrics;

/// How often sources are read and how long a collector may take.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Scrapes closer than this to the last collection get that collection.
    pub min_interval: Duration,
    /// How long a collection waits for each collector.
    pub deadline: Duration,
}

type Answer = Result<Collected, String>;

/// One collector's thread and what is known of it.
struct Worker {
    name: &'static str,
    ask: Sender<()>,
    answers: Receiver<(Answer, Duration)>,
    /// Asked and not answered by the last deadline.
    busy_since: Option<Instant>,
    failures: u64,
    malformed: u64,
}

impl Worker {
    fn start(mut c: Box<dyn Collector>) -> Worker {
        let name = c.name();
        let (ask, asked) = mpsc::channel::<()>();
        let (tell, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("glk-{name}"))
            .spawn(move || {
                while asked.recv().is_ok() {
                    let start = Instant::now();
                    let a = c.collect().map_err(|e| e.to_string());
                    if tell.send((a, start.elapsed())).is_err() {
                        break;
                    }
                }
            })
            .expect("a thread can be started");
        Worker {
            name,
            ask,
            answers,
            busy_since: None,
            failures: 0,
            malformed: 0,
        }
    }
}

/// One collector's part of a collection.
#[derive(Debug)]
pub struct Outcome {
    /// The collector.
    pub collector: &'static str,
    /// How long it took (the deadline, when it missed it).
    pub duration: Duration,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// One collection: every family of every collector that answered in time, and how each
/// collector did.
#[derive(Debug)]
pub struct Collection {
    /// The families, the exporter's own included.
    pub families: Vec<Family>,
    /// How each collector did.
    pub outcomes: Vec<Outcome>,
    /// When it was made.
    pub at: Instant,
}

struct State {
    workers: Vec<Worker>,
    last: Option<Arc<Collection>>,
    collections: u64,
}

/// The collectors, their threads and the last collection.
pub struct Hub {
    timing: Timing,
    state: Mutex<State>,
}

impl Hub {
    /// Starts a thread per collector.
    pub fn new(collectors: Vec<Box<dyn Collector>>, timing: Timing) -> Hub {
        Hub {
            timing,
            state: Mutex::new(State {
                workers: collectors.into_iter().map(Worker::start).collect(),
                last: None,
                collections: 0,
            }),
        }
    }

    /// The collectors' names.
    pub fn collectors(&self) -> Vec<&'static str> {
        self.lock().workers.iter().map(|w| w.name).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic in a scrape leaves the state as consistent as before it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last collection when it is younger than the minimum interval, else a new one.
    /// Concurrent callers wait for the one collection in progress and share it.
    pub fn scrape(&self) -> Arc<Collection> {
        let mut st = self.lock();
        if let Some(last) = &st.last {
            if last.at.elapsed() < self.timing.min_interval {
                return last.clone();
            }
        }
        let c = Arc::new(collect(&mut st, self.timing.deadline));
        st.last = Some(c.clone());
        c
    }
}

/// Asks every idle collector, waits for each until the deadline, and adds the exporter's
/// own families.
fn collect(st: &mut State, deadline: Duration) -> Collection {
    let start = Instant::now();
    st.collections += 1;
    for w in &mut st.workers {
        if w.busy_since.is_some() {
            // A late answer (dropped: it is old) frees it to be asked again.
            if w.answers.try_recv().is_err() {
                continue;
            }
            w.busy_since = None;
        }
        if w.ask.send(()).is_err() {
            w.busy_since = Some(start);
        }
    }
    let mut families: Vec<Family> = Vec::new();
    let mut outcomes = Vec::new();
    let mut findings: Vec<(FindingCode, u64)> = Vec::new();
    for w in &mut st.workers {
        let (error, duration) = match w.busy_since {
            Some(since) => (
                Some(format!(
                    "still reading since {:.1} s ago (stuck source?)",
                    since.elapsed().as_secs_f64()
                )),
                deadline,
            ),
            None => match w
                .answers
                .recv_timeout(deadline.saturating_sub(start.elapsed()))
            {
                Ok((Ok(c), took)) => {
                    w.malformed += c.malformed;
                    findings.extend(c.findings);
                    for f in c.families {
                        add_family(&mut families, f);
                    }
                    (None, took)
                }
                Ok((Err(e), took)) => (Some(e), took),
                Err(RecvTimeoutError::Timeout) => {
                    w.busy_since = Some(start);
                    (
                        Some(format!("no answer within {:.1} s", deadline.as_secs_f64())),
                        deadline,
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    (Some("its thread ended".to_string()), Duration::ZERO)
                }
            },
        };
        if error.is_some() {
            w.failures += 1;
        }
        outcomes.push(Outcome {
            collector: w.name,
            duration,
            error,
        });
    }
    families.push(findings_family(&findings));
    families.extend(own_families(st, &outcomes));
    Collection {
        families,
        outcomes,
        at: Instant::now(),
    }
}

/// Adds `f` to the family of its name, or as a new one.
fn add_family(families: &mut Vec<Family>, f: Family) {
    match families.iter_mut().find(|g| g.name == f.name) {
        Some(g) => g.extend(f),
        None => families.push(f),
    }
}

/// `glk_findings{code,severity}`: the node-local findings by code, for every code a
/// collector that answered judged (a code whose collector failed is left out, not 0).
fn findings_family(findings: &[(FindingCode, u64)]) -> Family {
    let mut f = metrics::GLK_FINDINGS.family();
    let mut by_code: Vec<(FindingCode, u64)> = Vec::new();
    for (code, n) in findings {
        match by_code.iter_mut().find(|(c, _)| c == code) {
            Some((_, m)) => *m += n,
            None => by_code.push((*code, *n)),
        }
    }
    by_code.sort();
    for (code, n) in by_code {
        let info = code.info();
        f.add(
            &[
                ("code", code.as_str()),
                ("severity", info.severity.as_str()),
            ],
            n as f64,
        );
    }
    f
}

/// The exporter's own families: each collector's success, duration, failures and
/// malformed input, and the collections made.
fn own_families(st: &State, outcomes: &[Outcome]) -> Vec<Family> {
    let mut success = metrics::EXPORTER_COLLECTOR_SUCCESS.family();
    let mut duration = metrics::EXPORTER_COLLECTOR_DURATION_SECONDS.family();
    let mut failures = metrics::EXPORTER_COLLECTOR_FAILURES.family();
    let mut malformed = metrics::EXPORTER_MALFORMED_LINES.family();
    for (w, o) in st.workers.iter().zip(outcomes) {
        let l = [("collector", w.name)];
        success.add(&l, if o.error.is_none() { 1.0 } else { 0.0 });
        duration.add(&l, o.duration.as_secs_f64());
        failures.add(&l, w.failures as f64);
        malformed.add(&l, w.malformed as f64);
    }
    let mut collections = metrics::EXPORTER_COLLECTIONS.family();
    collections.add(&[], st.collections as f64);
    let mut build = metrics::EXPORTER_BUILD_INFO.family();
    build.add(&[("version", env!("CARGO_PKG_VERSION"))], 1.0);
    vec![success, duration, failures, malformed, collections, build]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Kind;
    use std::io;

    /// Answers (after `delay` the first time), with one gauge counting its collections,
    /// or fails.
    struct Fake {
        name: &'static str,
        delay: Duration,
        fail: bool,
        n: u64,
    }

    impl Collector for Fake {
        fn name(&self) -> &'static str {
            self.name
        }
        fn collect(&mut self) -> io::Result<Collected> {
            if self.n == 0 {
                std::thread::sleep(self.delay);
            }
            self.n += 1;
            if self.fail {
                return Err(io::Error::other("bad input"));
            }
            let mut f = Family::new("x_collections", Kind::Gauge, "help");
            f.add(&[("c", self.name)], self.n as f64);
            Ok(Collected {
                families: vec![f],
                findings: vec![(FindingCode::StuckWaiter, self.n)],
                malformed: 1,
            })
        }
    }

    fn fake(name: &'static str, delay_ms: u64, fail: bool) -> Box<dyn Collector> {
        Box::new(Fake {
            name,
            delay: Duration::from_millis(delay_ms),
            fail,
            n: 0,
        })
    }

    fn value(c: &Collection, family: &str, label: &str) -> Option<f64> {
        let f = c.families.iter().find(|f| f.name == family)?;
        f.samples
            .iter()
            .find(|s| s.labels.iter().any(|(_, v)| v == label) || label.is_empty())
            .map(|s| s.value)
    }

    #[test]
    fn a_stuck_collector_fails_alone_and_is_not_asked_twice() {
        let hub = Hub::new(
            vec![
                fake("fast", 0, false),
                fake("slow", 700, false),
                fake("bad", 0, true),
            ],
            Timing {
                min_interval: Duration::ZERO,
                deadline: Duration::from_millis(200),
            },
        );
        let t = Instant::now();
        let c = hub.scrape();
        assert!(
            t.elapsed() < Duration::from_millis(600),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(
            value(&c, "glk_exporter_collector_success", "fast"),
            Some(1.0)
        );
        assert_eq!(
            value(&c, "glk_exporter_collector_success", "slow"),
            Some(0.0)
        );
        assert_eq!(
            value(&c, "glk_exporter_collector_success", "bad"),
            Some(0.0)
        );
        assert_eq!(c.outcomes[2].error.as_deref(), Some("bad input"));
        assert!(c.outcomes[1]
            .error
            .as_deref()
            .unwrap()
            .contains("no answer within 0.2 s"));
        assert_eq!(value(&c, "x_collections", "fast"), Some(1.0));
        assert_eq!(value(&c, "x_collections", "slow"), None);
        // Only the answering collector's finding counts.
        assert_eq!(value(&c, "glk_findings", "GLK-STUCK-WAITER"), Some(1.0));
        // While slow is still in its first read, it is not asked again.
        let c = hub.scrape();
        assert!(c.outcomes[1]
            .error
            .as_deref()
            .unwrap()
            .contains("still reading"));
        assert_eq!(
            value(&c, "glk_exporter_collector_failures", "slow"),
            Some(2.0)
        );
        // Once it answered, it is asked again and answers (its second collection).
        std::thread::sleep(Duration::from_millis(800));
        let c = hub.scrape();
        assert_eq!(
            value(&c, "glk_exporter_collector_success", "slow"),
            Some(1.0)
        );
        assert_eq!(value(&c, "x_collections", "slow"), Some(2.0));
        assert_eq!(value(&c, "glk_exporter_malformed_lines", "fast"), Some(3.0));
        assert_eq!(
            value(&c, "glk_exporter_collector_failures", "slow"),
            Some(2.0)
        );
    }

    #[test]
    fn scrapes_within_the_interval_share_one_collection() {
        let hub = Arc::new(Hub::new(
            vec![fake("a", 100, false)],
            Timing {
                min_interval: Duration::from_secs(60),
                deadline: Duration::from_secs(5),
            },
        ));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let h = hub.clone();
                std::thread::spawn(move || h.scrape())
            })
            .collect();
        let got: Vec<Arc<Collection>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(got.iter().all(|c| Arc::ptr_eq(c, &got[0])));
        assert_eq!(value(&got[0], "glk_exporter_collections", ""), Some(1.0));
    }
}
