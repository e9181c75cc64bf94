//! The HTTP(S) server: `GET` (or `HEAD`) of the telemetry path and a landing page, nothing
//! else. Every limit is fixed: a request head of 8 KiB at most, read within 10 s, and the
//! response taken within 30 s, however the client paces its bytes; one request per
//! connection; at most `max_connections` served at once (more are answered 503 and closed).
//! Authentication (when configured) is checked before anything is read from the node.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::exposition::{encode, Family, Format};
use crate::hub::Hub;
use crate::metrics;
use crate::web::WebConfig;

/// The largest request head read.
pub const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request head (and, over TLS, to shake hands).
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client has to take the whole response.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the server answers and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The path the metrics are served on (`--web.telemetry-path`).
    pub telemetry_path: String,
    /// Connections served at once at most.
    pub max_connections: usize,
    /// TLS and users.
    pub web: WebConfig,
}

/// The addresses of an exporter-toolkit listen address: `HOST:PORT`, `[V6]:PORT`, or
/// `:PORT` for every address (IPv6 and IPv4).
pub fn listen_addresses(spec: &str) -> io::Result<Vec<SocketAddr>> {
    let bad = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--web.listen-address {spec:?}: {why}"),
        )
    };
    if let Some(port) = spec.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|_| bad("not a port".into()))?;
        return Ok(vec![SocketAddr::from(([0u8; 16], port))]);
    }
    let addrs: Vec<SocketAddr> = spec
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(bad("names no address".into()));
    }
    Ok(addrs)
}

/// Binds `addr`; `[::]` falls back to `0.0.0.0` where IPv6 is off.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    match TcpListener::bind(addr) {
        Err(e) if addr.ip().is_unspecified() && addr.is_ipv6() => {
            TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], addr.port()))).map_err(|_| e)
        }
        r => r,
    }
    .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
}

/// The server's own counts.
#[derive(Default)]
struct Counts {
    /// Responses by status code.
    responses: Mutex<Vec<(u16, u64)>>,
    rejected: AtomicU64,
}

impl Counts {
    fn answered(&self, code: u16) {
        let mut r = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        match r.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => {
                r.push((code, 1));
                r.sort();
            }
        }
    }

    fn families(&self) -> Vec<Family> {
        let mut f = metrics::EXPORTER_HTTP_RESPONSES.family();
        for (code, n) in self
            .responses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            f.add(&[("code", &code.to_string())], *n as f64);
        }
        let mut r = metrics::EXPORTER_HTTP_CONNECTIONS_REJECTED.family();
        r.add(&[], self.rejected.load(Ordering::Relaxed) as f64);
        vec![f, r]
    }
}

/// A running server: its listeners' threads serve until the process ends.
pub struct Server {
    hub: Arc<Hub>,
    opts: Options,
    active: AtomicUsize,
    counts: Counts,
}

impl Server {
    /// A server of `hub`'s collections.
    pub fn new(hub: Arc<Hub>, opts: Options) -> Arc<Server> {
        Arc::new(Server {
            hub,
            opts,
            active: AtomicUsize::new(0),
            counts: Counts::default(),
        })
    }

    /// Serves every connection of `listener` (returns only when accepting fails for good).
    pub fn run(self: &Arc<Self>, listener: TcpListener) -> io::Result<()> {
        for conn in listener.incoming() {
            let stream = match conn {
                Ok(s) => s,
                // Out of descriptors, a connection reset before accept: wait a little.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            if self.active.fetch_add(1, Ordering::SeqCst) >= self.opts.max_connections {
                self.active.fetch_sub(1, Ordering::SeqCst);
                self.counts.rejected.fetch_add(1, Ordering::Relaxed);
                reject(stream);
                continue;
            }
            let me = self.clone();
            let spawned = std::thread::Builder::new()
                .name("glk-http".into())
                .spawn(move || {
                    me.connection(&stream);
                    // The place is free before the client sees the connection close: a
                    // client that connects again at once is not refused.
                    me.active.fetch_sub(1, Ordering::SeqCst);
                    drop(stream);
                });
            if spawned.is_err() {
                self.active.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Serves one connection (one request), over TLS when configured.
    fn connection(&self, stream: &TcpStream) {
        let _ = stream.set_nodelay(true);
        let until = Cell::new(Instant::now() + READ_TIMEOUT);
        let timed = Timed {
            stream,
            until: &until,
        };
        match &self.opts.web.tls {
            None => self.exchange(timed, &until),
            Some(tls) => {
                let Ok(conn) = rustls::ServerConnection::new(tls.clone()) else {
                    return;
                };
                self.exchange(rustls::StreamOwned::new(conn, timed), &until);
            }
        }
    }

    /// Reads one request from `s` and answers it; `until` is the deadline of `s`'s socket,
    /// moved to [`WRITE_TIMEOUT`] from now once the request is read.
    fn exchange<S: Read + Write>(&self, mut s: S, until: &Cell<Instant>) {
        let resp = match read_head(&mut s) {
            Ok(head) => self.respond(&head),
            Err(HeadError::TooLarge) => Response::text(431, "request head too large\n"),
            Err(HeadError::Malformed) => Response::text(400, "malformed request\n"),
            // Closed, timed out or a failed TLS handshake: nothing to answer.
            Err(HeadError::Io) => return,
        };
        self.counts.answered(resp.code);
        until.set(Instant::now() + WRITE_TIMEOUT);
        let _ = resp.write(&mut s);
    }

    /// The response to a request.
    fn respond(&self, h: &Head) -> Response {
        if h.method != "GET" && h.method != "HEAD" {
            let mut r = Response::text(405, "only GET and HEAD\n");
            r.headers.push(("Allow", "GET, HEAD".into()));
            return r;
        }
        if !self.opts.web.authorized(h.header("authorization")) {
            let mut r = Response::text(401, "unauthorized\n");
            r.headers
                .push(("WWW-Authenticate", "Basic realm=\"glk exporter\"".into()));
            return r;
        }
        let path = h.target.split('?').next().unwrap_or("");
        let mut r = if path == self.opts.telemetry_path {
            self.metrics(Format::negotiate(h.header("accept")))
        } else if path == "/" {
            landing(&self.opts.telemetry_path)
        } else {
            Response::text(404, "not found\n")
        };
        if h.method == "HEAD" {
            r.head_only = true;
        }
        r
    }

    /// The metrics in `format`: the hub's collection and the server's own counts.
    fn metrics(&self, format: Format) -> Response {
        let c = self.hub.scrape();
        let mut families: Vec<Family> = c.families.clone();
        families.extend(self.counts.families());
        Response {
            code: 200,
            content_type: format.content_type(),
            headers: Vec::new(),
            body: encode(&families, format).into_bytes(),
            head_only: false,
        }
    }
}

/// A connection's socket with a deadline for all its reads and writes together: each
/// waits at most for the time left, and none starts once it is up. A client that sends
/// its request or takes the response a byte at a time, each byte within a socket timeout,
/// still cannot hold one of the `max_connections` places longer than [`READ_TIMEOUT`] and
/// then [`WRITE_TIMEOUT`].
struct Timed<'a> {
    stream: &'a TcpStream,
    until: &'a Cell<Instant>,
}

impl Timed<'_> {
    /// The time left, or `TimedOut` when there is none.
    fn left(&self) -> io::Result<Duration> {
        self.until
            .get()
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "client too slow"))
    }
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        (&mut &*self.stream).read(buf)
    }
}

impl Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        (&mut &*self.stream).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&mut &*self.stream).flush()
    }
}

/// Answers 503 to a connection over the limit, without waiting on it.
fn reject(mut s: TcpStream) {
    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = s.write_all(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
}

/// The landing page: what this is and where the metrics are.
fn landing(telemetry: &str) -> Response {
    let path: String = telemetry
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "/-_.".contains(*c))
        .collect();
    let body = format!(
        "<!DOCTYPE html>\n<html><head><title>glk exporter</title></head><body>\n\
         <h1>glk exporter</h1>\n<p>GFS2 glock and DLM metrics of this node, version {}.</p>\n\
         <p><a href=\"{path}\">Metrics</a></p>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    Response {
        code: 200,
        content_type: "text/html; charset=utf-8",
        headers: Vec::new(),
        body: body.into_bytes(),
        head_only: false,
    }
}

/// A request head: the request line's method and target, and the header fields.
#[derive(Debug)]
pub struct Head {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// A header's value (the first one), by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request head was read.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// Longer than [`MAX_HEAD`].
    TooLarge,
    /// Not an HTTP/1 request.
    Malformed,
    /// The connection closed or timed out first.
    Io,
}

/// Reads a request head (up to the empty line), at most [`MAX_HEAD`] bytes.
pub fn read_head<R: Read>(r: R) -> Result<Head, HeadError> {
    let mut r = BufReader::with_capacity(1024, r.take(MAX_HEAD as u64 + 1));
    let mut total = 0usize;
    let mut lines: Vec<String> = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = r.read_until(b'\n', &mut line).map_err(|_| HeadError::Io)?;
        total += n;
        if total > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
        if n == 0 || !line.ends_with(b"\n") {
            return Err(if lines.is_empty() && n == 0 {
                HeadError::Io
            } else {
                HeadError::Malformed
            });
        }
        let text = String::from_utf8(line).map_err(|_| HeadError::Malformed)?;
        let text = text.trim_end_matches(['\r', '\n']).to_string();
        if text.is_empty() {
            if lines.is_empty() {
                continue; // a stray CRLF before the request line is allowed
            }
            break;
        }
        lines.push(text);
    }
    let mut req = lines[0].split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (req.next(), req.next(), req.next(), req.next())
    else {
        return Err(HeadError::Malformed);
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(HeadError::Malformed);
    }
    let mut headers = Vec::new();
    for l in &lines[1..] {
        let (n, v) = l.split_once(':').ok_or(HeadError::Malformed)?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    Ok(Head {
        method: method.to_string(),
        target: target.to_string(),
        headers,
    })
}

/// A response to write.
struct Response {
    code: u16,
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    head_only: bool,
}

impl Response {
    fn text(code: u16, body: &str) -> Response {
        Response {
            code,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            head_only: false,
        }
    }

    fn write<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let reason = match self.code {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            404 => "Not Found",
            405 => "Method Not Allowed",
            431 => "Request Header Fields Too Large",
            _ => "Error",
        };
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.code,
            self.content_type,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        w.write_all(head.as_bytes())?;
        if !self.head_only {
            w.write_all(&self.body)?;
        }
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_are_read_within_limits() {
        let h = read_head(
            &b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\n\r\nrest"[..],
        )
        .unwrap();
        assert_eq!(
            (h.method.as_str(), h.target.as_str()),
            ("GET", "/metrics?x=1")
        );
        assert_eq!(h.header("accept"), Some("text/plain"));
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(read_head(big.as_bytes()).unwrap_err(), HeadError::TooLarge);
        for bad in [
            &b"GET /\r\n\r\n"[..],
            b"GET / HTTP/1.1 x\r\n\r\n",
            b"GET nopath HTTP/1.1\r\n\r\n",
            b"GET / SPDY/3\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET / HTTP/1.1\r\n",
            b"\xff\xfe / HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(read_head(bad).unwrap_err(), HeadError::Malformed, "{bad:?}");
        }
        assert_eq!(read_head(&b""[..]).unwrap_err(), HeadError::Io);
    }

    /// A client pacing its bytes so that every socket read or write makes progress well
    /// within a socket timeout is still cut off at the connection's deadline, when sending
    /// its request and when taking the response.
    #[test]
    fn a_slow_client_is_cut_off_at_the_deadline() {
        // The client sends its request a byte, or reads the response 1 KiB, every 20 ms,
        // for 3 s at the most (then it closes, and the server's error is not a timeout).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let paced = |start: Instant| start.elapsed() < Duration::from_secs(3);
            let start = Instant::now();
            let mut c = TcpStream::connect(addr).unwrap();
            let request = b"GET /metrics HTTP/1.1\r\n".repeat(100);
            let sent = request
                .iter()
                .take_while(|b| {
                    std::thread::sleep(Duration::from_millis(20));
                    paced(start) && c.write_all(&[**b]).is_ok()
                })
                .count();
            let start = Instant::now();
            let mut c = TcpStream::connect(addr).unwrap();
            let mut buf = [0u8; 1024];
            let mut got = 0;
            while let (Ok(n @ 1..), true) = (c.read(&mut buf), paced(start)) {
                got += n;
                std::thread::sleep(Duration::from_millis(20));
            }
            (sent, got)
        });
        let deadline = || Cell::new(Instant::now() + Duration::from_millis(300));

        let (reader, _) = listener.accept().unwrap();
        let until = deadline();
        let head = read_head(Timed {
            stream: &reader,
            until: &until,
        });
        assert_eq!(head.unwrap_err(), HeadError::Io);
        assert!(until.get().elapsed() < Duration::from_secs(2));
        drop(reader);

        let (writer, _) = listener.accept().unwrap();
        let until = deadline();
        let body = vec![b'x'; 64 << 20];
        let mut timed = Timed {
            stream: &writer,
            until: &until,
        };
        let err = timed.write_all(&body).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
            "{err}"
        );
        assert!(until.get().elapsed() < Duration::from_secs(2));
        drop(writer);
        let (sent, got) = client.join().unwrap();
        assert!(
            sent < 100,
            "the server read {sent} bytes of a request it had no time for"
        );
        assert!(got > 0 && got < body.len(), "{got}");
    }

    #[test]
    fn listen_addresses_as_exporter_toolkit_writes_them() {
        assert_eq!(
            listen_addresses(":9929").unwrap(),
            vec![SocketAddr::from(([0u8; 16], 9929))]
        );
        assert_eq!(
            listen_addresses("127.0.0.1:80").unwrap(),
            vec![SocketAddr::from(([127, 0, 0, 1], 80))]
        );
        assert!(listen_addresses(":http")
            .unwrap_err()
            .to_string()
            .contains("not a port"));
    }
}
