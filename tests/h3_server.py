#!/usr/bin/env python3
"""A minimal HTTP/3 server for tests/e2e/h3.rs, on aioquic (1.7.2).

usage: h3_server.py CERT KEY MODE [N] [SECONDS] [TICKETS]

Listens on UDP 127.0.0.1 (a free port, printed on stdout) with the PEM
certificate CERT and key KEY, ALPN h3. MODE:
  ok      answer each request 200 with a small body;
  reset   reset each request stream with H3_REQUEST_CANCELLED (0x10c);
  close   answer N requests per connection, then close the connection with
          H3_INTERNAL_ERROR (0x102) when request N+1 arrives (unanswered);
  goaway  answer N requests per connection; when request N+1 of the
          first connection to reach it arrives, send GOAWAY with its stream
          ID and answer none from it on (the client retries them, once, on
          a fresh connection; one GOAWAY per server run, so no retried
          request is refused again);
  goaway-slow  as goaway, each answer 1 s after its request (so a
          connection drains for up to 1 s after its GOAWAY);
  settings  answer each request as ok, the server's SETTINGS carrying
          MAX_FIELD_SECTION_SIZE N (and aioquic's reserved one);
  violate answer N requests per connection; when request N+1 arrives,
          send a second SETTINGS on the control stream (H3_FRAME_UNEXPECTED:
          the client closes the connection with that code);
  recycle answer every request; after N on a connection, send GOAWAY
          with an ID 100 streams above the N-th (every connection: the
          client opens a new one, the old one drains, nothing refused);
  silent  never answer (the client's timeouts);
  sse     an OpenAI-style chat completion stream: the head at once, then 5
          content chunks, the first 60 ms after the request, the next 20 ms
          apart, then [DONE]; GET /v1/models lists one model, aioquic-model.
TICKETS: `none` (the default: no session ticket issued), `keep` (tickets
issued and kept: a later connection resumes and its 0-RTT is accepted),
`forget` (tickets issued, never found again: a full handshake, 0-RTT
rejected, as a server that restarted); looking a ticket up takes 20 ms,
so the requests due during a resumed handshake go in 0-RTT. A connection
that resumed a session prints "resumed", one whose 0-RTT was accepted
"early".
Exits when stdin closes or after SECONDS (default 120). Each connection's
end is a line on stdout after the port: "closed 0xCODE" with the error code
of the CONNECTION_CLOSE the server received or sent; each connection's
start is a line "open".
"""

import asyncio
import sys
import time

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import (
    H3_ALPN,
    ErrorCode,
    FrameType,
    H3Connection,
    Setting,
    encode_frame,
    encode_settings,
)
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (
    ConnectionTerminated,
    HandshakeCompleted,
    ProtocolNegotiated,
)

BODY = b"hello over h3\n"


class LimitedH3(H3Connection):
    """aioquic's HTTP/3 with MAX_FIELD_SECTION_SIZE in its SETTINGS."""

    section = 0

    def _get_local_settings(self):
        settings = super()._get_local_settings()
        settings[Setting.MAX_FIELD_SECTION_SIZE] = LimitedH3.section
        return settings


class Server(QuicConnectionProtocol):
    mode = "ok"
    limit = 0
    # goaway modes: a GOAWAY was sent (one per server run).
    went_away = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._h3 = None
        self._count = 0
        self._answered = set()
        self._goaway = None
        self._paths = {}

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            print("closed %#x" % event.error_code, flush=True)
        if isinstance(event, HandshakeCompleted):
            if event.session_resumed:
                print("resumed", flush=True)
            if event.early_data_accepted:
                print("early", flush=True)
        if isinstance(event, ProtocolNegotiated):
            print("open", flush=True)
            if Server.mode == "settings":
                LimitedH3.section = Server.limit
                self._h3 = LimitedH3(self._quic)
            else:
                self._h3 = H3Connection(self._quic)
        if self._h3 is None:
            return
        for ev in self._h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self._paths[ev.stream_id] = dict(ev.headers).get(b":path")
            if isinstance(ev, (HeadersReceived, DataReceived)) and ev.stream_ended:
                self.request(ev.stream_id)

    def request(self, sid):
        if sid in self._answered:
            return
        self._answered.add(sid)
        self._count += 1
        mode = Server.mode
        control = self._h3._local_control_stream_id
        if self._goaway is not None and sid >= self._goaway:
            pass  # not processed: at or above the GOAWAY's ID
        elif (mode == "violate" or not Server.went_away) and (
            mode in ("goaway", "goaway-slow", "violate") and self._count > Server.limit
        ):
            if mode != "violate":
                Server.went_away = True
                self._goaway = sid
                frame = encode_frame(FrameType.GOAWAY, encode_uint_var(sid))
            else:
                frame = encode_frame(FrameType.SETTINGS, encode_settings({0x21: 1}))
            self._quic.send_stream_data(control, frame)
        elif mode == "goaway-slow":
            # Answered late: the GOAWAY's connection drains for up to 1 s.
            asyncio.get_running_loop().call_later(1.0, self.answer, sid)
        elif mode == "recycle":
            self.answer(sid)
            if self._count == Server.limit:
                # Room for the 100 streams a client may have open: every
                # request already sent is answered, none refused.
                self._goaway = sid + 4 * 100
                frame = encode_frame(FrameType.GOAWAY, encode_uint_var(self._goaway))
                self._quic.send_stream_data(control, frame)
        elif mode in ("ok", "settings", "goaway", "violate") or (
            mode == "close" and self._count <= Server.limit
        ):
            self.answer(sid)
        elif mode == "sse" and self._paths.get(sid) == b"/v1/models":
            # The model list, for a client that discovers its model.
            models = b'{"object":"list","data":[{"id":"aioquic-model"}]}'
            self._h3.send_headers(
                sid,
                [
                    (b":status", b"200"),
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(models)).encode()),
                ],
            )
            self._h3.send_data(sid, models, end_stream=True)
        elif mode == "sse":
            self._h3.send_headers(
                sid, [(b":status", b"200"), (b"content-type", b"text/event-stream")]
            )
            loop = asyncio.get_running_loop()
            for i in range(5):
                loop.call_later(0.060 + 0.020 * i, self.chunk, sid, i)
        elif mode == "malformed":
            # A DATA frame (type 0x00, 2 bytes) before any HEADERS: a
            # response that breaks RFC 9114 section 4.1 (H3_FRAME_UNEXPECTED).
            self._quic.send_stream_data(sid, b"\x00\x02ok", end_stream=True)
        elif mode == "reset":
            self._quic.reset_stream(sid, ErrorCode.H3_REQUEST_CANCELLED)
        elif mode == "close":
            self._quic.close(
                error_code=ErrorCode.H3_INTERNAL_ERROR, reason_phrase="close mode"
            )
        # silent: nothing
        self.transmit()

    def answer(self, sid):
        self._h3.send_headers(
            sid,
            [
                (b":status", b"200"),
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(BODY)).encode()),
            ],
        )
        self._h3.send_data(sid, BODY, end_stream=True)
        self.transmit()


    def chunk(self, sid, i):
        delta = '{"choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}' % i
        data = ("data: %s\n\n" % delta).encode()
        last = i == 4
        if last:
            data += b"data: [DONE]\n\n"
        self._h3.send_data(sid, data, end_stream=last)
        self.transmit()


async def main():
    cert, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 120.0
    tickets = sys.argv[6] if len(sys.argv) > 6 else "none"
    Server.mode = mode
    Server.limit = limit
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    store = {}
    handler = fetcher = None

    def looked_up(label):
        # 20 ms to find a ticket (the whole server waits): a resumed
        # handshake lasts long enough for the client's requests due
        # meanwhile to go in 0-RTT.
        time.sleep(0.020)
        return store.pop(label, None)

    if tickets == "keep":
        handler = lambda t: store.__setitem__(t.ticket, t)
        fetcher = looked_up
    elif tickets == "forget":
        handler = lambda t: None
        fetcher = lambda label: looked_up(None)
    server = await serve(
        "127.0.0.1",
        0,
        configuration=config,
        create_protocol=Server,
        session_ticket_handler=handler,
        session_ticket_fetcher=fetcher,
    )
    port = server._transport.get_extra_info("sockname")[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    try:
        await asyncio.wait_for(stdin_closed, seconds)
    except asyncio.TimeoutError:
        pass
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
