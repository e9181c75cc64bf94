//! `glk exporter`: the node's glock and DLM metrics for Prometheus, served over HTTP(S)
//! (exporter-toolkit's flags and web configuration file) or written to a `*.prom` file for
//! node_exporter's textfile collector. The work is the `exporter` crate's; this wires it.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use analysis::findings::Thresholds;
use exporter::collect::trace::Tracer;
use exporter::collect::{self, Config};
use exporter::exposition::{encode, Format};
use exporter::hub::{Hub, Timing};
use exporter::serve::{self, Server};
use exporter::web::WebConfig;

use crate::inputs;

#[derive(Debug, clap::Args)]
pub struct ExporterArgs {
    /// Where to listen: `HOST:PORT`, `[V6]:PORT`, or `:PORT` for every address (repeat
    /// for several).
    #[arg(
        long = "web.listen-address",
        value_name = "ADDRESS",
        default_value = ":9929"
    )]
    pub listen: Vec<String>,
    /// The path the metrics are served on (`/` is a landing page linking to it).
    #[arg(
        long = "web.telemetry-path",
        value_name = "PATH",
        default_value = "/metrics"
    )]
    pub telemetry_path: String,
    /// TLS and basic authentication, in Prometheus exporter-toolkit's format
    /// (`tls_server_config`, `basic_auth_users` with bcrypt hashes).
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config: Option<PathBuf>,
    /// Connections served at once at most; more are answered 503.
    #[arg(long = "web.max-connections", value_name = "N", default_value_t = 40,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_connections: u16,
    /// Scrapes within this many seconds of the last collection are served that collection
    /// (a glocks file of a million glocks is not read again for every scraper).
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = clikit::args::seconds)]
    pub min_interval: f64,
    /// How long a collector may read before its collection counts as failed (a stuck
    /// debugfs read never holds a scrape longer).
    #[arg(long = "collector.timeout", value_name = "SECS", default_value_t = 10.0,
          value_parser = clikit::args::seconds)]
    pub collector_timeout: f64,
    #[command(flatten)]
    pub stuck: clikit::args::StuckArgs,
    /// With --trace: a glock demoted at other nodes' request at least this many times in
    /// the last one to two minutes is hot (GLK-HOT-GLOCK, glk doctor's threshold).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub hot_demotes: u64,
    /// Also read the gfs2 tracepoints, in a private tracefs instance removed on every exit:
    /// histograms of DLM round trips and of glock waits and holds, remote demote counts and
    /// GLK-HOT-GLOCK. Needs root.
    #[arg(long)]
    pub trace: bool,
    /// Write the metrics to this `*.prom` file (atomically, every --min-interval seconds)
    /// for node_exporter's textfile collector, instead of listening on a port.
    #[arg(long, value_name = "FILE.prom")]
    pub textfile: Option<PathBuf>,
    /// Collect once and exit: the metrics on stdout (text format 0.0.4), or in the
    /// --textfile file (for a cron job or a systemd timer).
    #[arg(long)]
    pub once: bool,
    /// The debugfs root to read (default: the mounted debugfs).
    #[arg(long, value_name = "DIR")]
    pub debugfs: Option<PathBuf>,
    /// The sysfs root to read.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs: PathBuf,
}

pub fn run(a: &ExporterArgs) -> io::Result<()> {
    let debugfs = inputs::debugfs_root(a.debugfs.as_deref())?;
    let cfg = Config {
        debugfs,
        sysfs: a.sysfs.clone(),
        stuck_after: a.stuck.stuck_after,
        thresholds: Thresholds {
            hot_demotes: a.hot_demotes,
            ..Thresholds::default()
        },
        judged_per_fs: 1000,
    };
    let timing = Timing {
        min_interval: Duration::from_secs_f64(a.min_interval),
        deadline: Duration::from_secs_f64(a.collector_timeout),
    };
    // Checked before anything starts: a bad file must not leave an open port behind.
    let web = match &a.web_config {
        Some(p) => WebConfig::load(p)?,
        None => WebConfig::default(),
    };
    if a.once {
        if a.trace {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--trace reads events over time: not with --once",
            ));
        }
        let hub = Hub::new(collect::all(&cfg), timing);
        let c = hub.scrape();
        report_failures(&c);
        return match &a.textfile {
            Some(p) => exporter::textfile::write(p, &c.families),
            None => io::stdout()
                .lock()
                .write_all(encode(&c.families, Format::Text).as_bytes()),
        };
    }
    // From here on, Ctrl-C, SIGTERM and SIGHUP end the exporter cleanly (tracing off and
    // its instance removed first).
    tracepipe::stop::install();
    let mut collectors = collect::all(&cfg);
    let tracer = if a.trace {
        let t = Tracer::start(&cfg.sysfs)?;
        collectors.push(Box::new(t.collector(cfg.thresholds)));
        Some(t)
    } else {
        None
    };
    let hub = Arc::new(Hub::new(collectors, timing));
    let served = match &a.textfile {
        Some(p) => write_textfile(p, &hub, timing.min_interval),
        None => serve(a, hub, web),
    };
    if let Some(t) = tracer {
        t.stop()?;
    }
    served
}

/// Writes the textfile every `interval` until a stop signal.
fn write_textfile(path: &std::path::Path, hub: &Hub, interval: Duration) -> io::Result<()> {
    while !tracepipe::stop::requested() {
        let c = hub.scrape();
        report_failures(&c);
        exporter::textfile::write(path, &c.families)?;
        let due = std::time::Instant::now() + interval;
        while std::time::Instant::now() < due && !tracepipe::stop::requested() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// Listens on every address and serves until a stop signal.
fn serve(a: &ExporterArgs, hub: Arc<Hub>, web: WebConfig) -> io::Result<()> {
    if !a.telemetry_path.starts_with('/') || a.telemetry_path == "/" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "--web.telemetry-path {:?}: a path starting with / (and not / itself)",
                a.telemetry_path
            ),
        ));
    }
    let mut listeners = Vec::new();
    for spec in &a.listen {
        for addr in serve::listen_addresses(spec)? {
            listeners.push(serve::bind(addr)?);
        }
    }
    let tls = web.tls.is_some();
    let auth = !web.users.is_empty();
    let server = Server::new(
        hub.clone(),
        serve::Options {
            telemetry_path: a.telemetry_path.clone(),
            max_connections: usize::from(a.max_connections),
            web,
        },
    );
    for l in &listeners {
        eprintln!(
            "glk exporter: serving {}{} on {}://{} (collectors: {})",
            a.telemetry_path,
            if auth { " with basic auth" } else { "" },
            if tls { "https" } else { "http" },
            l.local_addr()?,
            hub.collectors().join(", ")
        );
    }
    let threads: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            let s = server.clone();
            std::thread::spawn(move || s.run(l))
        })
        .collect();
    // The listeners run until the process ends; a stop signal ends it here.
    while !tracepipe::stop::requested() {
        if let Some(t) = threads.iter().position(|t| t.is_finished()) {
            let t = threads.into_iter().nth(t).expect("a finished thread");
            t.join()
                .map_err(|_| io::Error::other("a listener thread panicked"))??;
            return Err(io::Error::other("a listener stopped accepting"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// Names each collector that failed, on stderr.
fn report_failures(c: &exporter::hub::Collection) {
    for o in &c.outcomes {
        if let Some(e) = &o.error {
            eprintln!("glk exporter: collector {} failed: {e}", o.collector);
        }
    }
}
