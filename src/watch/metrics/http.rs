//! The metrics server: [`Server`], a minimal HTTP/1.1 server on a thread of its own that
//! serves the watcher's [`Metrics`] at `/metrics` and its health at `/healthz` (the judgement
//! of `status --health`, made by [`crate::watch::health`]).
//!
//! The server faces a network, so it trusts nothing it reads: a request's head is read up to
//! 8 KiB (past it: 431) within two seconds of the connection being taken (past it: 408); each
//! connection has its own thread, at most [`MAX_CONNECTIONS`] at once (one more is answered
//! 503 at once, without waiting on it), so a slow client holds one slot for a bounded time and
//! never the watcher; one request per connection; nothing a client sends is written back; and
//! a connection's handling runs under `catch_unwind`, so no request can end the thread that
//! accepts. A request only reads the numbers, but an approval's `POST` (`approve.rs`), which
//! exists only with a token file and writes only a person's answer.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::watch::health::Health;
use validator::error::Error;

use super::{CONTENT_TYPE, Metrics};

/// Connections handled at once; the next is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 8;
/// The most bytes of a request's head (request line and headers) read.
pub const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request's head, from when the connection was taken.
const READ_DEADLINE: Duration = Duration::from_secs(2);
/// How long one write of the answer may wait for a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// After answering, what is still coming is read and dropped for this long at most (up to
/// [`DRAIN_BYTES`]), so the client reads the answer before the connection is reset.
const DRAIN_FOR: Duration = Duration::from_millis(500);
const DRAIN_BYTES: usize = 64 * 1024;

/// The watcher's health, judged when `/healthz` is asked for.
pub type HealthCheck = Box<dyn Fn() -> Health + Send + Sync>;

/// The metrics server: serving until dropped, when the port is closed before `drop` returns.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr` (port 0: one the OS picks; [`Server::addr`] says which) and serves
    /// `metrics` and `health` from a thread of its own. A port that cannot be bound is an error
    /// that names the address.
    pub fn start(
        addr: SocketAddr,
        metrics: Arc<Metrics>,
        health: HealthCheck,
        approvals: Option<super::approve::Endpoint>,
    ) -> Result<Self, Error> {
        let refused = |source: std::io::Error| Error::Metrics {
            addr,
            reason: source.to_string(),
            help: match source.kind() {
                std::io::ErrorKind::AddrInUse => {
                    "another process listens on this port: choose another port, or stop it"
                }
                std::io::ErrorKind::AddrNotAvailable => {
                    "this host has no such address: 0.0.0.0:PORT listens on every interface, 127.0.0.1:PORT on this host only"
                }
                std::io::ErrorKind::PermissionDenied => {
                    "ports below 1024 need privileges: use a higher one, such as 9464"
                }
                _ => "check the address, or leave --metrics-addr out to serve no metrics",
            },
        };
        let listener = TcpListener::bind(addr).map_err(refused)?;
        let addr = listener.local_addr().map_err(refused)?;
        let stop = Arc::new(AtomicBool::new(false));
        let pages = Arc::new(Pages {
            metrics,
            health,
            approvals,
        });
        let thread = thread::Builder::new()
            .name("metrics".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || accept(&listener, &stop, &pages)
            })
            .map_err(refused)?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens (with the port the OS picked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    /// Stops accepting and closes the port: the accepting thread is woken by a connection of
    /// our own, sees the stop and drops the listener. Connections being answered end on their
    /// own timeouts.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let wake = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), self.addr.port())
            }
            IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), self.addr.port())
            }
            _ => self.addr,
        };
        let woken = TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok();
        if let Some(thread) = self.thread.take() {
            // Without the wake-up the thread stays in accept(); the process ends it.
            if woken || thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// What the server serves.
struct Pages {
    metrics: Arc<Metrics>,
    health: HealthCheck,
    /// `POST /approvals/…`, when the rules name a token file.
    approvals: Option<super::approve::Endpoint>,
}

/// The accepting thread: a thread per connection, at most [`MAX_CONNECTIONS`] at once.
fn accept(listener: &TcpListener, stop: &AtomicBool, pages: &Arc<Pages>) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match stream {
            Ok(stream) => stream,
            Err(err) => {
                // Out of descriptors, or the like: do not spin on it.
                tracing::debug!(%err, "metrics: cannot accept a connection");
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            busy(&stream);
            continue;
        }
        let slot = Slot(Arc::clone(&open));
        let pages = Arc::clone(pages);
        // A thread that cannot be made drops the connection and its slot with the closure.
        let _ = thread::Builder::new()
            .name("metrics-conn".into())
            .spawn(move || {
                let _slot = slot;
                let _ = catch_unwind(AssertUnwindSafe(|| answer(stream, &pages)));
            });
    }
}

/// One of the [`MAX_CONNECTIONS`], given back when the connection is done with.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Too many connections: a 503 written without waiting, what the request has sent so far read
/// and dropped without waiting (so the close does not reset the connection before the answer
/// is read), and the connection closed.
fn busy(mut stream: &TcpStream) {
    if stream.set_nonblocking(true).is_ok() {
        let busy = Response::text(503, "Service Unavailable", "busy: too many connections\n");
        let _ = stream.write_all(&busy.bytes(false));
        let _ = stream.shutdown(Shutdown::Write);
        let mut sink = [0u8; 4096];
        for _ in 0..4 {
            if !matches!(stream.read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
    }
}

/// How reading a request's head ended, when it did not end with a head.
#[derive(Debug, PartialEq, Eq)]
enum Unread {
    /// Past [`MAX_HEAD`] with no end in sight.
    TooLarge,
    /// Not whole within [`READ_DEADLINE`].
    TimedOut,
    /// The client closed, or the connection failed: nobody to answer.
    Gone,
}

fn answer(mut stream: TcpStream, pages: &Pages) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let deadline = Instant::now() + READ_DEADLINE;
    let mut head = [0u8; MAX_HEAD];
    let (response, head_only) = match read_head(&mut stream, &mut head, deadline) {
        Ok(len) => route(&head[..len], pages),
        Err(Unread::TooLarge) => (
            Response::text(
                431,
                "Request Header Fields Too Large",
                "request head over 8 KiB\n",
            ),
            false,
        ),
        Err(Unread::TimedOut) => (
            Response::text(408, "Request Timeout", "request timeout\n"),
            false,
        ),
        Err(Unread::Gone) => return,
    };
    if stream.write_all(&response.bytes(head_only)).is_err() {
        return;
    }
    let _ = stream.flush();
    // A refused request may have more coming (a body, the rest of a huge head): it is read and
    // dropped, briefly, as closing with it unread would reset the connection before the answer
    // is read. Otherwise the request was read whole, and the slot is given back at once.
    if !matches!(response.status, 400 | 405 | 431) {
        return;
    }
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + DRAIN_FOR;
    let mut drained = 0;
    let mut sink = [0u8; 4096];
    while drained < DRAIN_BYTES {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// Reads into `buf` until the blank line that ends a request's head; the length read (the head
/// and anything after it).
fn read_head(
    stream: &mut impl ReadTimeout,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<usize, Unread> {
    let mut len = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Unread::TimedOut);
        }
        if len == buf.len() {
            return Err(Unread::TooLarge);
        }
        stream.timeout(left).map_err(|_| Unread::Gone)?;
        let n = match stream.read(&mut buf[len..]) {
            Ok(0) => return Err(Unread::Gone),
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(Unread::TimedOut);
            }
            Err(_) => return Err(Unread::Gone),
        };
        // The end may straddle what was there and what came.
        let from = len.saturating_sub(3);
        len += n;
        if head_ends(&buf[from..len]) {
            return Ok(len);
        }
    }
}

/// A stream whose reads can be given a timeout (a socket; a byte slice in the tests).
trait ReadTimeout: Read {
    fn timeout(&mut self, timeout: Duration) -> std::io::Result<()>;
}

impl ReadTimeout for TcpStream {
    fn timeout(&mut self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
    }
}

/// Whether `bytes` hold the end of a head: an empty line (`\r\n\r\n`, or bare `\n`s).
fn head_ends(bytes: &[u8]) -> bool {
    bytes.windows(4).any(|w| w == b"\r\n\r\n") || bytes.windows(2).any(|w| w == b"\n\n")
}

/// The answer to a request's head, and whether it is a HEAD request (no body sent).
fn route(head: &[u8], pages: &Pages) -> (Response, bool) {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return (Response::text(400, "Bad Request", "bad request\n"), false);
    };
    if !version.starts_with(b"HTTP/1.") || method.is_empty() || !target.starts_with(b"/") {
        return (Response::text(400, "Bad Request", "bad request\n"), false);
    }
    if method == b"POST"
        && let Some(endpoint) = &pages.approvals
        && let Some((status, reason, body)) = super::approve::answer(head, target, endpoint)
    {
        return (Response::text(status, reason, body), false);
    }
    let head_only = match method {
        b"GET" => false,
        b"HEAD" => true,
        _ => {
            let mut response = Response::text(405, "Method Not Allowed", "method not allowed\n");
            response.allow = true;
            return (response, false);
        }
    };
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    let response = match path {
        b"/metrics" => Response {
            content_type: CONTENT_TYPE,
            ..Response::text(200, "OK", pages.metrics.render())
        },
        b"/healthz" => {
            let health = (pages.health)();
            if health.healthy {
                Response::text(200, "OK", "ok\n")
            } else {
                let why = validator_text::one_line(&health.message);
                Response::text(503, "Service Unavailable", format!("unhealthy: {why}\n"))
            }
        }
        _ => Response::text(404, "Not Found", "not found\n"),
    };
    (response, head_only)
}

/// An answer: never anything the client sent.
struct Response {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    allow: bool,
    body: String,
}

impl Response {
    fn text(status: u16, reason: &'static str, body: impl Into<String>) -> Self {
        Response {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            allow: false,
            body: body.into(),
        }
    }

    /// The bytes on the wire; `head_only` for a HEAD request, which gets the headers alone.
    fn bytes(&self, head_only: bool) -> Vec<u8> {
        let mut text = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n",
            self.status,
            self.reason,
            self.content_type,
            self.body.len()
        );
        if self.allow {
            text.push_str("Allow: GET, HEAD\r\n");
        }
        text.push_str("\r\n");
        if !head_only {
            text.push_str(&self.body);
        }
        text.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use validator::verdict::Decision;

    fn pages(healthy: bool) -> Pages {
        Pages {
            metrics: Arc::new(Metrics::default()),
            health: Box::new(move || {
                let mut health = Health::unhealthy("the watcher is\nwedged");
                health.healthy = healthy;
                health
            }),
            approvals: None,
        }
    }

    fn get(head: &str, pages: &Pages) -> (String, bool) {
        let (response, head_only) = route(head.as_bytes(), pages);
        (
            String::from_utf8(response.bytes(head_only)).unwrap(),
            head_only,
        )
    }

    #[test]
    fn requests_are_routed_by_method_and_path() {
        let healthy = pages(true);
        let (text, _) = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &healthy);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            text.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{text}"
        );
        assert!(
            text.contains("\r\n\r\n# HELP validator_build_info"),
            "{text}"
        );
        let (text, _) = get("GET /metrics?x=1 HTTP/1.0\n\n", &healthy);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");

        let (text, head_only) = get("HEAD /metrics HTTP/1.1\r\n\r\n", &healthy);
        assert!(head_only);
        let (headers, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, "");
        let length: usize = headers
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, healthy.metrics.render().len());

        let (text, _) = get("GET /healthz HTTP/1.1\r\n\r\n", &healthy);
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("\r\n\r\nok\n"),
            "{text}"
        );
        let (text, _) = get("GET /healthz HTTP/1.1\r\n\r\n", &pages(false));
        assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
        assert!(
            text.ends_with("\r\n\r\nunhealthy: the watcher is; wedged\n"),
            "{text}"
        );

        let (text, _) = get("GET /nothing HTTP/1.1\r\n\r\n", &healthy);
        assert!(text.starts_with("HTTP/1.1 404 "), "{text}");
        let (text, _) = get(
            "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            &healthy,
        );
        assert!(
            text.starts_with("HTTP/1.1 405 ") && text.contains("Allow: GET, HEAD\r\n"),
            "{text}"
        );
        for bad in [
            "",
            "GET\r\n\r\n",
            "GET /metrics\r\n\r\n",
            "GET metrics HTTP/1.1\r\n\r\n",
            "GET /metrics SPDY/3\r\n\r\n",
            "GET  /metrics HTTP/1.1\r\n\r\n",
            "\u{0}\u{ff}",
        ] {
            let (text, _) = get(bad, &healthy);
            assert!(text.starts_with("HTTP/1.1 400 "), "{bad:?}: {text}");
        }
    }

    #[test]
    fn no_answer_holds_what_the_request_said() {
        let healthy = pages(true);
        for request in [
            "GET /<script>secret HTTP/1.1\r\n\r\n",
            "DELETE /secret HTTP/1.1\r\n\r\n",
            "GET secret HTTP/1.1\r\n\r\n",
        ] {
            let (text, _) = get(request, &healthy);
            assert!(!text.contains("secret"), "{text}");
        }
    }

    /// Bytes that arrive in the pieces given, then nothing (a read times out).
    struct Pieces(Vec<Vec<u8>>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
            let piece = &mut self.0[0];
            let n = piece.len().min(buf.len());
            buf[..n].copy_from_slice(&piece[..n]);
            piece.drain(..n);
            if piece.is_empty() {
                self.0.remove(0);
            }
            Ok(n)
        }
    }

    impl ReadTimeout for Pieces {
        fn timeout(&mut self, _: Duration) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn read(pieces: &[&[u8]]) -> Result<usize, Unread> {
        let mut buf = [0u8; MAX_HEAD];
        let deadline = Instant::now() + Duration::from_secs(5);
        read_head(
            &mut Pieces(pieces.iter().map(|p| p.to_vec()).collect()),
            &mut buf,
            deadline,
        )
    }

    #[test]
    fn a_head_is_read_to_its_blank_line_and_no_further_than_the_cap() {
        assert_eq!(read(&[b"GET / HTTP/1.1\r\n\r\n"]), Ok(18));
        // The blank line split across reads.
        assert_eq!(read(&[b"GET / HTTP/1.1\r\n\r", b"\n"]), Ok(18));
        assert_eq!(read(&[b"GET / HTTP/1.1\r", b"\n", b"\r", b"\n"]), Ok(18));
        assert_eq!(read(&[b"GET / HTTP/1.1\r\n"]), Err(Unread::TimedOut));
        assert_eq!(read(&[]), Err(Unread::TimedOut));
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(read(&[huge.as_bytes()]), Err(Unread::TooLarge));
        // Exactly at the cap is still a head.
        let full = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD - 23));
        assert_eq!(full.len(), MAX_HEAD);
        assert_eq!(read(&[full.as_bytes()]), Ok(MAX_HEAD));
    }

    #[test]
    fn a_past_deadline_times_out_before_reading() {
        let mut buf = [0u8; 64];
        let past = Instant::now() - Duration::from_millis(1);
        let mut pieces = Pieces(vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()]);
        assert_eq!(
            read_head(&mut pieces, &mut buf, past),
            Err(Unread::TimedOut)
        );
    }

    #[test]
    fn a_server_answers_over_tcp_and_closes_its_port_when_dropped() {
        let metrics = Arc::new(Metrics::default());
        metrics.published(Decision::Pass, super::super::Trip::NotNow);
        let server = Server::start(
            "127.0.0.1:0".parse().unwrap(),
            Arc::clone(&metrics),
            Box::new(|| Health::unhealthy("x")),
            None,
        )
        .unwrap();
        let addr = server.addr();
        assert_ne!(addr.port(), 0);
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        assert!(
            text.contains("validator_verdicts_total{decision=\"PASS\"} 1\n"),
            "{text}"
        );

        let taken = Server::start(
            addr,
            Arc::clone(&metrics),
            Box::new(|| Health::unhealthy("x")),
            None,
        );
        let err = taken.err().expect("the port is taken").to_string();
        assert!(
            err.contains(&addr.to_string()) && err.contains("help:"),
            "{err}"
        );

        drop(server);
        assert!(TcpStream::connect(addr).is_err(), "the port is still open");
    }
}
