//! Telling a person that a call waits for them: one JSON POST to the rules' webhook, without
//! an HTTP client crate. `http://` is a minimal HTTP/1.1 request over a `TcpStream` with
//! connect, write and read timeouts; `https://` runs `curl` (an argv, never a shell) with
//! `--max-time`, where it is on the PATH. Every failure is an error value for the caller to
//! log: a webhook never decides a call.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Why the webhook was not told.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("`{0}` is no http:// or https:// URL with a host")]
    BadUrl(String),
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered {status}")]
    Refused { url: String, status: String },
    #[error("an https webhook needs `curl` on the PATH, and there is none; {url} was not told")]
    NoCurl { url: String },
}

/// POSTs `body` (JSON) to `url`, giving up after `within`.
pub fn notify(url: &str, body: &serde_json::Value, within: Duration) -> Result<(), WebhookError> {
    let text = body.to_string();
    if let Some(rest) = url.strip_prefix("http://") {
        return post_http(url, rest, &text, within);
    }
    if url.starts_with("https://") {
        return post_with_curl(url, &text, within);
    }
    Err(WebhookError::BadUrl(validator_text::one_line(url)))
}

/// `host[:port][/path]` split into the host and port to connect to, the `Host` header and the
/// request target.
fn split(rest: &str) -> Option<(String, u16, &str, String)> {
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse::<u16>() {
                Ok(port) => (host, port),
                // An IPv6 literal without a port.
                Err(_) if authority.starts_with('[') && authority.ends_with(']') => (authority, 80),
                Err(_) => return None,
            }
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_owned(), port, authority, path))
}

fn post_http(url: &str, rest: &str, body: &str, within: Duration) -> Result<(), WebhookError> {
    let unreachable = |reason: String| WebhookError::Unreachable {
        url: validator_text::one_line(url),
        reason,
    };
    let (host, port, authority, path) =
        split(rest).ok_or_else(|| WebhookError::BadUrl(validator_text::one_line(url)))?;
    let started = Instant::now();
    let left = || {
        within
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1))
    };
    let addrs = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|err| unreachable(err.to_string()))?;
    let mut last = String::from("the host has no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, left()) {
            Ok(connected) => {
                stream = Some(connected);
                break;
            }
            Err(err) => last = err.to_string(),
        }
    }
    let mut stream = stream.ok_or_else(|| unreachable(last))?;
    stream
        .set_write_timeout(Some(left()))
        .and_then(|()| stream.set_read_timeout(Some(left())))
        .map_err(|err| unreachable(err.to_string()))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: validator/{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .and_then(|()| stream.flush())
        .map_err(|err| unreachable(err.to_string()))?;
    // The status line is all that is read: the rest is the server's business.
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while !head.contains(&b'\n') && head.len() < 4096 {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(err) => return Err(unreachable(err.to_string())),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let line = line.lines().next().unwrap_or_default();
    let status = line.split(' ').nth(1).unwrap_or_default();
    if status.starts_with('2') && status.len() == 3 {
        Ok(())
    } else {
        Err(WebhookError::Refused {
            url: validator_text::one_line(url),
            status: validator_text::one_line(if line.is_empty() { "nothing" } else { line }),
        })
    }
}

fn post_with_curl(url: &str, body: &str, within: Duration) -> Result<(), WebhookError> {
    let seconds = within.as_secs().max(1).to_string();
    let argv: Vec<OsString> = [
        "curl",
        "--silent",
        "--show-error",
        "--fail",
        "--output",
        "/dev/null",
        "--proto",
        "=https",
        "--max-time",
        &seconds,
        "--request",
        "POST",
        "--header",
        "Content-Type: application/json",
        "--data-binary",
        "@-",
        "--url",
        url,
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    let cwd = std::env::temp_dir();
    let spec = validator_process::Spec {
        argv: &argv,
        cwd: &cwd,
        env: &[],
        env_remove: &[],
        timeout: within + Duration::from_secs(1),
        output_cap: 4096,
        cancel: None,
        separate_stderr: false,
        sandbox: None,
    };
    let shown = validator_text::one_line(url);
    match validator_process::run_with_input(&spec, body.as_bytes()) {
        Ok(finished) if finished.exit == validator_process::Exit::Code(0) => Ok(()),
        Ok(finished) => Err(WebhookError::Unreachable {
            url: shown,
            reason: format!(
                "curl ended {:?}: {}",
                finished.exit,
                validator_text::one_line(&String::from_utf8_lossy(&finished.output))
            ),
        }),
        Err(validator_process::SpawnError::NotFound(_)) => Err(WebhookError::NoCurl { url: shown }),
        Err(err) => Err(WebhookError::Unreachable {
            url: shown,
            reason: err.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_into_where_to_connect_and_what_to_ask() {
        let cases = [
            ("example.com/hook", Some(("example.com", 80, "/hook"))),
            ("127.0.0.1:8080", Some(("127.0.0.1", 8080, "/"))),
            ("h:9?x=1", Some(("h", 9, "/?x=1"))),
            ("[::1]:81/a", Some(("::1", 81, "/a"))),
            ("[::1]/a", Some(("::1", 80, "/a"))),
            ("user@h/a", None),
            (":80/a", None),
            ("h:port/a", None),
        ];
        for (rest, expected) in cases {
            let got = split(rest);
            let got = got
                .as_ref()
                .map(|(host, port, _, path)| (host.as_str(), *port, path.as_str()));
            assert_eq!(got, expected, "{rest}");
        }
    }

    #[test]
    fn a_post_reaches_a_server_and_its_status_is_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !String::from_utf8_lossy(&got).contains("\"text\"") {
                let n = stream.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            stream.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
            String::from_utf8_lossy(&got).into_owned()
        });
        let url = format!("http://127.0.0.1:{port}/hook");
        notify(
            &url,
            &serde_json::json!({"text": "hi"}),
            Duration::from_secs(5),
        )
        .unwrap();
        let got = server.join().unwrap();
        assert!(got.starts_with("POST /hook HTTP/1.1\r\n"), "{got}");
        assert!(got.contains("Content-Type: application/json"), "{got}");
    }

    #[test]
    fn a_refusal_or_no_server_is_an_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("http://127.0.0.1:{port}/");
        assert!(notify(&url, &serde_json::json!({}), Duration::from_secs(2)).is_err());
        assert!(matches!(
            notify("ftp://x", &serde_json::json!({}), Duration::from_secs(1)),
            Err(WebhookError::BadUrl(_))
        ));
    }
}
