//! `--openai` requests end to end: a bare URL against `metronome serve
//! --sse` (model discovered, path completed), the bytes actually sent, the
//! workload report, and the one-line errors of bad input. Every server is
//! started here, on 127.0.0.1.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::{engines, metronome, plain, run_json, server};
use metronome::serve::ServeConfig;
use serde_json::{json, Value};

// A bare URL: the model discovered, the path completed, the workload report.
mod run;
// The bytes sent: bodies, cache-bust prefixes, drawn lengths, token counts.
mod wire;
// Bad input: one line and an exit code.
mod input;
// Percentiles of every request kept, the peers' views, sweeps of streams.
mod metrics;

/// `metronome serve ARGS --listen 127.0.0.1:0` as a child process; killed
/// on drop.
struct ServeProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServeProcess {
    fn start(args: &[&str]) -> ServeProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start metronome serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("metronome serve listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        ServeProcess { child, addr }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request as a raw server saw it.
#[derive(Clone, Debug)]
struct Seen {
    head: String,
    body: Vec<u8>,
}

/// A raw HTTP/1.1 server that records every request: `GET /v1/models`
/// lists `raw-model`, anything else gets a two-token SSE stream.
fn recording_server() -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    thread::spawn(move || {
        for conn in listener.incoming().take(64) {
            let Ok(conn) = conn else { return };
            let log = Arc::clone(&log);
            thread::spawn(move || serve_recording(conn, &log));
        }
    });
    (addr, seen)
}

fn serve_recording(mut conn: TcpStream, log: &Mutex<Vec<Seen>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut scratch = [0u8; 8192];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut scratch) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&scratch[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        while buf.len() < end + 4 + len {
            match conn.read(&mut scratch) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&scratch[..n]),
            }
        }
        let body = buf[end + 4..end + 4 + len].to_vec();
        buf.drain(..end + 4 + len);
        let reply = if head.starts_with("GET /v1/models ") {
            let list = r#"{"object":"list","data":[{"id":"raw-model","object":"model"}]}"#;
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{list}",
                list.len()
            )
        } else {
            let events = concat!(
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n",
                "data: [DONE]\n\n"
            );
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{events}",
                events.len()
            )
        };
        log.lock().unwrap().push(Seen { head, body });
        if conn.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
