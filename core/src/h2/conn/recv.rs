//! The receiving half of [`Connection`]: [`Connection::handle_read`] takes
//! the server's frames one at a time (SETTINGS, HEADERS and CONTINUATION
//! through HPACK, DATA and its windows, RST_STREAM, PING, GOAWAY) and turns
//! them into [`Event`]s; the sending half is in `mod.rs`.

use super::*;

fn decode_head<const T: usize>(
    decoder: &mut Decoder<T>,
    block: &[u8],
    watched: &[crate::check::Check],
) -> Result<Head, HpackError> {
    let mut head = Head::default();
    let mut fields = ResponseFields::default();
    decoder.decode(block, |name, value| {
        for (i, c) in watched.iter().take(64).enumerate() {
            if c.header.is_some_and(|h| h.accepts(name, value)) {
                head.fields |= 1 << i;
            }
        }
        if name.first() == Some(&b':') {
            head.pseudo = true;
            if head.regular || name != b":status" || head.status.is_some() {
                head.malformed = true;
            }
            match value {
                [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                    head.status = Some(
                        u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'),
                    );
                }
                _ => head.malformed = true,
            }
        } else {
            head.regular = true;
            fields.field(name, value);
        }
    })?;
    head.event_stream = fields.event_stream;
    head.grpc_status = fields.grpc_status;
    Ok(head)
}

impl<const S: usize, const T: usize, const B: usize> Connection<S, T, B> {
    /// Handles the first frame at the front of `input` (the unconsumed
    /// bytes of the read buffer): returns the bytes it took and at most
    /// one event. `(0, None)`: no whole frame yet; read more.
    ///
    /// # Errors
    /// An [`H2Error`] ends the connection; every later call returns it again.
    pub fn handle_read(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), H2Error> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.frame(input) {
            Ok(r) => Ok(r),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn frame(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), H2Error> {
        // An HTTP/1.x server reads the preface as a bad request and
        // answers it: its status line would read as a frame of some 4.7 MB.
        if !self.ready && input.starts_with(b"HTTP/") {
            return Err(H2Error::Http1Answer);
        }
        let Some((frame, n)) = read_frame(input, DEFAULT_MAX_FRAME_SIZE)? else {
            return Ok((0, None));
        };
        if !self.ready && !matches!(frame, Frame::Settings { ack: false, .. }) {
            return Err(H2Error::Protocol(Violation::FirstFrameNotSettings));
        }
        if let Some(c) = self.continuing {
            let Frame::Continuation {
                stream,
                end_headers,
                block,
            } = frame
            else {
                return Err(H2Error::Protocol(Violation::ContinuationExpected));
            };
            if stream != c.stream {
                return Err(H2Error::Protocol(Violation::ContinuationExpected));
            }
            let end = c.len + block.len();
            self.block
                .get_mut(c.len..end)
                .ok_or(H2Error::HeaderBlockTooLarge)?
                .copy_from_slice(block);
            if !end_headers {
                self.continuing = Some(Continuing { len: end, ..c });
                return Ok((n, None));
            }
            self.continuing = None;
            let head = decode_head(&mut self.decoder, &self.block[..end], self.watched)?;
            self.fields = head.fields;
            return Ok((n, self.on_head(c.stream, c.end_stream, head)));
        }
        let event = match frame {
            Frame::Data {
                stream,
                end_stream,
                data,
                ..
            } => {
                // A subslice of `input`: its offset, for `data_of`.
                self.data_at = (data.as_ptr() as usize).wrapping_sub(input.as_ptr() as usize);
                self.on_data(stream, end_stream, data.len(), frame.flow_len() as u32)?
            }
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                block,
                ..
            } => {
                if self.is_idle(stream) {
                    return Err(H2Error::Protocol(Violation::IdleStream));
                }
                if !end_headers {
                    self.block
                        .get_mut(..block.len())
                        .ok_or(H2Error::HeaderBlockTooLarge)?
                        .copy_from_slice(block);
                    self.continuing = Some(Continuing {
                        stream,
                        end_stream,
                        len: block.len(),
                    });
                    return Ok((n, None));
                }
                let head = decode_head(&mut self.decoder, block, self.watched)?;
                self.fields = head.fields;
                self.on_head(stream, end_stream, head)
            }
            Frame::Continuation { .. } => {
                return Err(H2Error::Protocol(Violation::UnexpectedContinuation))
            }
            Frame::Priority { .. } | Frame::Unknown { .. } => None,
            Frame::RstStream { stream, code } => {
                if self.is_idle(stream) {
                    return Err(H2Error::Protocol(Violation::IdleStream));
                }
                match self.slot(stream) {
                    Some(s) if matches!(s.phase, Phase::AwaitHead | Phase::Body) => {
                        *s = FREE;
                        self.open -= 1;
                        Some(Event::StreamReset {
                            stream,
                            code,
                            remote: true,
                        })
                    }
                    Some(s) => {
                        // Already reset by the client: nothing more is owed.
                        *s = FREE;
                        None
                    }
                    None => None,
                }
            }
            Frame::Settings { ack: true, .. } => {
                self.settings_acked = true;
                None
            }
            Frame::Settings { ack: false, params } => {
                for (id, value) in params.iter() {
                    self.apply_setting(id, value)?;
                }
                self.acks_owed += 1;
                if self.ready {
                    self.unblocked()
                } else {
                    self.ready = true;
                    Some(Event::Ready)
                }
            }
            Frame::PushPromise { .. } => return Err(H2Error::Protocol(Violation::PushPromise)),
            Frame::Ping { ack: true, data } => Some(Event::Pong {
                sent_ns: u64::from_be_bytes(data),
            }),
            Frame::Ping { ack: false, data } => {
                if self.pongs_owed == PONG_CAP {
                    return Err(H2Error::PingFlood);
                }
                self.pongs[self.pongs_owed] = data;
                self.pongs_owed += 1;
                None
            }
            Frame::GoAway {
                last_stream, code, ..
            } => {
                let last = self.goaway.map_or(last_stream, |l| l.min(last_stream));
                self.goaway = Some(last);
                let refused = self.streams().filter(|&id| id > last).count();
                Some(Event::GoAway {
                    last_stream: last,
                    code,
                    refused,
                })
            }
            Frame::WindowUpdate {
                stream: 0,
                increment,
            } => {
                if increment == 0 {
                    return Err(H2Error::Protocol(Violation::ZeroWindowIncrement));
                }
                self.send_window += i64::from(increment);
                if self.send_window > i64::from(MAX_WINDOW) {
                    return Err(H2Error::FlowControl);
                }
                if core::mem::take(&mut self.conn_blocked) {
                    Some(Event::Unblocked)
                } else {
                    None
                }
            }
            Frame::WindowUpdate { stream, increment } => {
                if self.is_idle(stream) {
                    return Err(H2Error::Protocol(Violation::IdleStream));
                }
                match self.slot(stream) {
                    Some(s) if matches!(s.phase, Phase::AwaitHead | Phase::Body) => {
                        s.send_window += i64::from(increment);
                        if increment == 0 {
                            self.reset(stream, ErrorCode::PROTOCOL_ERROR)
                        } else if s.send_window > i64::from(MAX_WINDOW) {
                            self.reset(stream, ErrorCode::FLOW_CONTROL_ERROR)
                        } else if core::mem::take(&mut s.blocked) {
                            Some(Event::Unblocked)
                        } else {
                            None
                        }
                    }
                    _ => None,
                }
            }
        };
        Ok((n, event))
    }

    /// An event for blocked sends after the windows grew, if any.
    fn unblocked(&mut self) -> Option<Event> {
        let mut any = core::mem::take(&mut self.conn_blocked) && self.send_window > 0;
        for s in &mut self.slots {
            if s.blocked && s.send_window > 0 {
                s.blocked = false;
                any = true;
            }
        }
        any.then_some(Event::Unblocked)
    }

    fn apply_setting(&mut self, id: u16, value: u32) -> Result<(), H2Error> {
        match id {
            setting::ENABLE_PUSH if value != 0 => {
                return Err(H2Error::Protocol(Violation::SettingsValue))
            }
            setting::MAX_CONCURRENT_STREAMS => self.peer_max_streams = value,
            setting::INITIAL_WINDOW_SIZE => {
                if value > MAX_WINDOW {
                    return Err(H2Error::FlowControl);
                }
                let delta = i64::from(value) - self.peer_window;
                self.peer_window = i64::from(value);
                for s in &mut self.slots {
                    if matches!(s.phase, Phase::AwaitHead | Phase::Body) {
                        s.send_window += delta;
                        if s.send_window > i64::from(MAX_WINDOW) {
                            return Err(H2Error::FlowControl);
                        }
                    }
                }
            }
            setting::MAX_FRAME_SIZE => {
                if !(DEFAULT_MAX_FRAME_SIZE..=frame::MAX_FRAME_SIZE_LIMIT).contains(&value) {
                    return Err(H2Error::Protocol(Violation::SettingsValue));
                }
                self.peer_max_frame = value;
            }
            // Advisory (RFC 9113 section 6.5.2): kept for start_planned.
            setting::MAX_HEADER_LIST_SIZE => self.peer_max_list = value,
            // HEADER_TABLE_SIZE: the encoder never indexes, so the server's
            // table size does not matter; unknown settings are ignored
            // (RFC 9113 section 6.5.2).
            _ => {}
        }
        Ok(())
    }

    /// Resets a stream from the client's side: a RST_STREAM is owed.
    fn reset(&mut self, stream: u32, code: ErrorCode) -> Option<Event> {
        let s = self.active(stream)?;
        s.phase = Phase::Reset(code);
        self.open -= 1;
        Some(Event::StreamReset {
            stream,
            code,
            remote: false,
        })
    }

    /// The server ended its side of the stream.
    fn remote_end(&mut self, stream: u32) {
        if let Some(s) = self.active(stream) {
            if s.local_done {
                *s = FREE;
            } else {
                // The response is complete before the request: stop sending.
                s.phase = Phase::Reset(ErrorCode::CANCEL);
            }
            self.open -= 1;
        }
    }

    fn on_data(
        &mut self,
        stream: u32,
        end_stream: bool,
        len: usize,
        flow: u32,
    ) -> Result<Option<Event>, H2Error> {
        if i64::from(flow) > self.recv_window {
            return Err(H2Error::FlowControl);
        }
        self.recv_window -= i64::from(flow);
        self.recv_unacked += flow;
        if self.is_idle(stream) {
            return Err(H2Error::Protocol(Violation::IdleStream));
        }
        let Some(s) = self.slot(stream) else {
            return Ok(None); // a stream already closed: ignored
        };
        match s.phase {
            Phase::Body => {}
            Phase::AwaitHead => return Ok(self.reset(stream, ErrorCode::PROTOCOL_ERROR)),
            _ => return Ok(None),
        }
        if i64::from(flow) > s.recv_window {
            return Ok(self.reset(stream, ErrorCode::FLOW_CONTROL_ERROR));
        }
        s.recv_window -= i64::from(flow);
        s.recv_unacked += flow;
        if end_stream {
            self.remote_end(stream);
        }
        Ok(Some(Event::Data {
            stream,
            len,
            end_stream,
        }))
    }

    fn on_head(&mut self, stream: u32, end_stream: bool, head: Head) -> Option<Event> {
        let phase = self.slot(stream)?.phase;
        match phase {
            Phase::AwaitHead => {
                let status = match head.status {
                    Some(status) if !head.malformed => status,
                    _ => return self.reset(stream, ErrorCode::PROTOCOL_ERROR),
                };
                if status < 200 {
                    // Informational: the final head is still to come.
                    return if end_stream {
                        self.reset(stream, ErrorCode::PROTOCOL_ERROR)
                    } else {
                        None
                    };
                }
                if let Some(s) = self.slot(stream) {
                    s.phase = Phase::Body;
                }
                if end_stream {
                    self.remote_end(stream);
                }
                Some(Event::Headers {
                    stream,
                    status,
                    event_stream: head.event_stream,
                    grpc_status: head.grpc_status,
                    end_stream,
                })
            }
            Phase::Body => {
                if !end_stream || head.pseudo {
                    return self.reset(stream, ErrorCode::PROTOCOL_ERROR);
                }
                self.remote_end(stream);
                Some(Event::Trailers {
                    stream,
                    grpc_status: head.grpc_status,
                })
            }
            _ => None,
        }
    }
}
