//! Drives a client `Connection` with server bytes cut into reads, the way
//! an engine does: append each read to the buffer, handle frames until
//! `(0, None)`, drop what was consumed, write what the connection owes
//! after every frame. Shared by the golden tests and the fuzz target.
#![allow(dead_code)]

use metronome_core::h2::frame::{read_frame, Frame, HEADER_LEN};
use metronome_core::h2::{Connection, Event, H2Error};

/// Everything a run produced: events (with the refused streams handed back
/// after each GOAWAY), the bytes the client wrote in reply, the error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub events: Vec<Event>,
    pub refused: Vec<u32>,
    pub written: Vec<u8>,
    pub error: Option<H2Error>,
}

pub fn drive<const S: usize, const T: usize, const B: usize>(
    conn: &mut Connection<S, T, B>,
    wire: &[u8],
    cuts: &[usize],
) -> Run {
    let mut run = Run {
        events: Vec::new(),
        refused: Vec::new(),
        written: Vec::new(),
        error: None,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut out = [0u8; 512];
    let mut at = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(wire.len())).collect();
    bounds.sort_unstable();
    bounds.push(wire.len());
    'reads: for end in bounds {
        if end < at {
            continue;
        }
        buf.extend_from_slice(&wire[at..end]);
        at = end;
        loop {
            match conn.handle_read(&buf) {
                Ok((n, event)) => {
                    assert!(n <= buf.len(), "consumed {n} of {}", buf.len());
                    buf.drain(..n);
                    if let Some(e) = event {
                        if let Event::GoAway { .. } = e {
                            while let Some(id) = conn.take_refused() {
                                run.refused.push(id);
                            }
                        }
                        run.events.push(e);
                    }
                    flush(conn, &mut out, &mut run.written);
                    if n == 0 {
                        break;
                    }
                }
                Err(e) => {
                    run.error = Some(e);
                    flush(conn, &mut out, &mut run.written);
                    break 'reads;
                }
            }
        }
    }
    run
}

pub fn flush<const S: usize, const T: usize, const B: usize>(
    conn: &mut Connection<S, T, B>,
    out: &mut [u8],
    written: &mut Vec<u8>,
) {
    while conn.wants_transmit() {
        let n = conn.poll_transmit(out);
        if n == 0 {
            break;
        }
        written.extend_from_slice(&out[..n]);
    }
}

/// The frames in `bytes` (client output after the preface), as owned debug strings.
pub fn frames(mut bytes: &[u8]) -> Vec<String> {
    let mut v = Vec::new();
    while bytes.len() >= HEADER_LEN {
        let (f, n) = read_frame(bytes, 1 << 24).unwrap().unwrap();
        v.push(match f {
            Frame::Settings { ack, params } => {
                format!("SETTINGS ack={ack} {:?}", params.iter().collect::<Vec<_>>())
            }
            other => format!("{other:?}"),
        });
        bytes = &bytes[n..];
    }
    assert!(bytes.is_empty());
    v
}
