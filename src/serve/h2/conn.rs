//! The connection's frames, its settings and its flow-control windows:
//! reading frames, answering SETTINGS, PING and WINDOW_UPDATE, taking DATA,
//! resetting and forgetting streams, writing frames.

use std::sync::atomic::Ordering;

use metronome_core::h2::conn::{MAX_WINDOW, PREFACE};
use metronome_core::h2::frame::{
    flag, kind, read_frame, setting, write_header, ErrorCode, Frame, DEFAULT_MAX_FRAME_SIZE,
    HEADER_LEN, MAX_FRAME_SIZE_LIMIT,
};

use super::{H2Connection, DEFAULT_WINDOW, RECV_CONNECTION_WINDOW, RECV_STREAM_WINDOW};
use crate::serve::job::{MAX_STORED_BODIES, MAX_STORED_BODY};

/// A header block (HEADERS and its CONTINUATIONs) longer than this ends
/// the connection (`ENHANCE_YOUR_CALM`).
const MAX_HEADER_BLOCK: usize = 64 * 1024;

/// An error that ends the connection: the GOAWAY's code and debug text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ConnError(pub(super) ErrorCode, pub(super) &'static str);

impl H2Connection<'_> {
    /// SETTINGS (`MAX_CONCURRENT_STREAMS`, `INITIAL_WINDOW_SIZE`) and the
    /// connection window raised.
    pub(super) fn server_preface(&mut self) {
        let mut params = Vec::with_capacity(12);
        for (id, value) in [
            (
                setting::MAX_CONCURRENT_STREAMS,
                self.shared.config.max_streams,
            ),
            (setting::INITIAL_WINDOW_SIZE, RECV_STREAM_WINDOW),
        ] {
            params.extend_from_slice(&id.to_be_bytes());
            params.extend_from_slice(&value.to_be_bytes());
        }
        put_frame(&mut self.out, kind::SETTINGS, 0, 0, &params);
        window_update(&mut self.out, 0, RECV_CONNECTION_WINDOW - DEFAULT_WINDOW);
    }

    pub(super) fn goaway(&mut self, code: ErrorCode, debug: &[u8]) {
        let mut payload = Vec::with_capacity(8 + debug.len());
        payload.extend_from_slice(&self.last_stream.to_be_bytes());
        payload.extend_from_slice(&code.0.to_be_bytes());
        payload.extend_from_slice(debug);
        put_frame(&mut self.out, kind::GOAWAY, 0, 0, &payload);
    }

    /// Handles every whole frame in the buffer.
    pub(super) fn read_frames(&mut self) -> Result<(), ConnError> {
        let buf = std::mem::take(&mut self.buf);
        let mut pos = 0;
        let result = loop {
            let rest = &buf[pos..];
            if !self.preface_seen {
                let n = rest.len().min(PREFACE.len());
                if rest[..n] != PREFACE[..n] {
                    break Err(ConnError(
                        ErrorCode::PROTOCOL_ERROR,
                        "bad connection preface",
                    ));
                }
                if n < PREFACE.len() {
                    break Ok(());
                }
                self.preface_seen = true;
                pos += PREFACE.len();
                continue;
            }
            match read_frame(rest, DEFAULT_MAX_FRAME_SIZE) {
                Ok(None) => break Ok(()),
                Err(e) => break Err(ConnError(e.code(), "malformed frame")),
                Ok(Some((frame, n))) => {
                    pos += n;
                    if let Err(e) = self.frame(frame) {
                        break Err(e);
                    }
                }
            }
        };
        self.buf = buf;
        self.buf.drain(..pos);
        result
    }

    fn frame(&mut self, frame: Frame<'_>) -> Result<(), ConnError> {
        let protocol = |why| Err(ConnError(ErrorCode::PROTOCOL_ERROR, why));
        if let Some((stream, _, _)) = &self.continuation {
            if !matches!(frame, Frame::Continuation { stream: s, .. } if s == *stream) {
                return protocol("a frame interrupted a header block");
            }
        }
        if !self.settings_seen {
            if !matches!(frame, Frame::Settings { ack: false, .. }) {
                return protocol("the first frame was not SETTINGS");
            }
            self.settings_seen = true;
        }
        match frame {
            Frame::Data {
                stream,
                end_stream,
                data,
                ..
            } => self.data(stream, end_stream, data, frame.flow_len()),
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                block,
                ..
            } => {
                if end_headers {
                    self.header_block(stream, end_stream, block)
                } else {
                    if block.len() > MAX_HEADER_BLOCK {
                        return Err(ConnError(
                            ErrorCode::ENHANCE_YOUR_CALM,
                            "header block too large",
                        ));
                    }
                    self.continuation = Some((stream, end_stream, block.to_vec()));
                    Ok(())
                }
            }
            Frame::Continuation {
                end_headers, block, ..
            } => {
                let Some((stream, end_stream, mut whole)) = self.continuation.take() else {
                    return protocol("CONTINUATION without HEADERS");
                };
                if whole.len() + block.len() > MAX_HEADER_BLOCK {
                    return Err(ConnError(
                        ErrorCode::ENHANCE_YOUR_CALM,
                        "header block too large",
                    ));
                }
                whole.extend_from_slice(block);
                if end_headers {
                    self.header_block(stream, end_stream, &whole)
                } else {
                    self.continuation = Some((stream, end_stream, whole));
                    Ok(())
                }
            }
            Frame::Priority { stream, priority } => {
                if priority.dependency == stream {
                    self.reset(stream, ErrorCode::PROTOCOL_ERROR);
                }
                Ok(())
            }
            Frame::RstStream { stream, .. } => {
                if self.idle(stream) {
                    return protocol("RST_STREAM on an idle stream");
                }
                self.remove(stream, false);
                Ok(())
            }
            Frame::Settings { ack, params } => {
                if ack {
                    return Ok(());
                }
                for (id, value) in params.iter() {
                    self.setting(id, value)?;
                }
                put_frame(&mut self.out, kind::SETTINGS, flag::ACK, 0, &[]);
                Ok(())
            }
            Frame::PushPromise { .. } => protocol("PUSH_PROMISE from a client"),
            Frame::Ping { ack, data } => {
                if !ack {
                    put_frame(&mut self.out, kind::PING, flag::ACK, 0, &data);
                }
                Ok(())
            }
            Frame::GoAway { .. } => {
                self.goaway_received = true;
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment),
            Frame::Unknown { .. } => Ok(()),
        }
    }

    /// A stream the client has not opened yet.
    pub(super) fn idle(&self, stream: u32) -> bool {
        stream > self.last_stream
    }

    fn setting(&mut self, id: u16, value: u32) -> Result<(), ConnError> {
        match id {
            setting::HEADER_TABLE_SIZE => self.table_update = true,
            setting::ENABLE_PUSH if value > 1 => {
                return Err(ConnError(ErrorCode::PROTOCOL_ERROR, "ENABLE_PUSH above 1"))
            }
            setting::INITIAL_WINDOW_SIZE => {
                if value > MAX_WINDOW {
                    return Err(ConnError(
                        ErrorCode::FLOW_CONTROL_ERROR,
                        "INITIAL_WINDOW_SIZE above 2^31-1",
                    ));
                }
                let delta = i64::from(value) - self.peer_initial_window;
                self.peer_initial_window = i64::from(value);
                for s in self.streams.values_mut() {
                    s.send_window += delta;
                    if s.send_window > i64::from(MAX_WINDOW) {
                        return Err(ConnError(
                            ErrorCode::FLOW_CONTROL_ERROR,
                            "a stream window above 2^31-1",
                        ));
                    }
                }
            }
            setting::MAX_FRAME_SIZE => {
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_SIZE_LIMIT).contains(&value) {
                    return Err(ConnError(
                        ErrorCode::PROTOCOL_ERROR,
                        "MAX_FRAME_SIZE out of range",
                    ));
                }
                self.peer_max_frame = value;
            }
            _ => {}
        }
        Ok(())
    }

    fn window_update(&mut self, stream: u32, increment: u32) -> Result<(), ConnError> {
        if stream == 0 {
            if increment == 0 {
                return Err(ConnError(
                    ErrorCode::PROTOCOL_ERROR,
                    "WINDOW_UPDATE of 0 on the connection",
                ));
            }
            self.send_window += i64::from(increment);
            if self.send_window > i64::from(MAX_WINDOW) {
                return Err(ConnError(
                    ErrorCode::FLOW_CONTROL_ERROR,
                    "connection window above 2^31-1",
                ));
            }
            return Ok(());
        }
        if self.idle(stream) {
            return Err(ConnError(
                ErrorCode::PROTOCOL_ERROR,
                "WINDOW_UPDATE on an idle stream",
            ));
        }
        let Some(s) = self.streams.get_mut(&stream) else {
            return Ok(()); // closed: ignored
        };
        if increment == 0 {
            self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            return Ok(());
        }
        s.send_window += i64::from(increment);
        if s.send_window > i64::from(MAX_WINDOW) {
            self.reset(stream, ErrorCode::FLOW_CONTROL_ERROR);
        }
        Ok(())
    }

    fn data(
        &mut self,
        stream: u32,
        end_stream: bool,
        data: &[u8],
        flow: usize,
    ) -> Result<(), ConnError> {
        // `flow` is at most a frame (16 KiB): it fits every integer type.
        let flow32 = u32::try_from(flow).unwrap_or(u32::MAX);
        self.recv_window -= i64::from(flow32);
        if self.recv_window < 0 {
            return Err(ConnError(
                ErrorCode::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.window_owed += flow32;
        if self.idle(stream) {
            return Err(ConnError(
                ErrorCode::PROTOCOL_ERROR,
                "DATA on an idle stream",
            ));
        }
        let Some(s) = self.streams.get_mut(&stream) else {
            return Ok(()); // closed (reset or answered): ignored
        };
        if !s.receiving {
            self.reset(stream, ErrorCode::STREAM_CLOSED);
            return Ok(());
        }
        s.recv_window -= i64::from(flow32);
        if s.recv_window < 0 {
            self.reset(stream, ErrorCode::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        s.window_owed += flow32;
        s.received += data.len() as u64;
        if s.keep_body && !s.too_large {
            if s.body.len() + data.len() > MAX_STORED_BODY
                || self.stored + data.len() > MAX_STORED_BODIES
            {
                s.too_large = true;
                self.stored -= s.body.len();
                s.body = Vec::new();
            } else {
                s.body.extend_from_slice(data);
                self.stored += data.len();
            }
        }
        if end_stream {
            self.complete(stream);
        }
        Ok(())
    }

    /// Sends RST_STREAM and forgets the stream (not served).
    pub(super) fn reset(&mut self, stream: u32, code: ErrorCode) {
        put_frame(
            &mut self.out,
            kind::RST_STREAM,
            0,
            stream,
            &code.0.to_be_bytes(),
        );
        self.remove(stream, false);
    }

    /// Forgets a stream; counts it as served when it finished properly.
    pub(super) fn remove(&mut self, stream: u32, finished: bool) {
        if let Some(s) = self.streams.remove(&stream) {
            self.stored -= s.body.len();
            if finished && s.counted {
                self.shared.served.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Returns received DATA to the client's windows.
    pub(super) fn return_windows(&mut self) {
        if self.window_owed > 0 {
            window_update(&mut self.out, 0, self.window_owed);
            self.recv_window += i64::from(self.window_owed);
            self.window_owed = 0;
        }
        for (&id, s) in &mut self.streams {
            if s.receiving && s.window_owed > 0 {
                window_update(&mut self.out, id, s.window_owed);
                s.recv_window += i64::from(s.window_owed);
                s.window_owed = 0;
            }
        }
    }
}

/// Appends a frame (core's header writer, then the payload).
pub(super) fn put_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let mut head = [0u8; HEADER_LEN];
    // Payloads here are at most the client's max frame size (< 2^24).
    if write_header(&mut head, payload.len(), kind, flags, stream).is_some() {
        out.extend_from_slice(&head);
        out.extend_from_slice(payload);
    }
}

pub(super) fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_frame(
        out,
        kind::WINDOW_UPDATE,
        0,
        stream,
        &increment.to_be_bytes(),
    );
}
