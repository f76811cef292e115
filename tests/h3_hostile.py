#!/usr/bin/env python3
"""A hostile HTTP/3 server for tests/hostile/h3.rs, on aioquic's QUIC layer
(1.7.2) alone: no aioquic HTTP/3 code, every HTTP/3 frame, QPACK field
section and stream type built here by hand from RFC 9114 and RFC 9204, so
the server can send exactly the bytes a scenario needs, valid or not.

usage: h3_hostile.py CERT KEY MODE [SECONDS [NAME VALUE]]

Listens on UDP 127.0.0.1 (a free port, printed on stdout) with the PEM
certificate CERT and key KEY, ALPN h3. Each connection opens its control
stream with an empty SETTINGS (unless the mode says otherwise); a request
is a client bidirectional stream whose FIN arrived, numbered from 1 over
the whole server. MODE:

  ok              answer each request: 200, content-length 2, body "ok";
  idle            max_idle_timeout 300 ms; after the handshake, send and
                  read nothing more (not even ACKs);
  big_headers     odd requests ok; even ones a HEADERS frame of 20 000
                  bytes (above the client's MAX_FIELD_SECTION_SIZE);
  dynamic_ref     ... even ones a field section with Required Insert
                  Count 1 (a dynamic-table reference);
  bad_huffman     ... even ones a Huffman string padded with EOS;
  upper_name      ... even ones with the field name "X-Upper";
  no_status       ... even ones without :status;
  status_abc      ... even ones with :status "abc";
  data_after_trailers     ... even ones: 200, DATA, trailers, DATA;
  headers_after_trailers  ... even ones: 200, DATA, trailers, trailers;
  data_after_1xx  ... even ones: 103, DATA, then a whole 200 answer;
  informational   every answer 103, 200 (no content-length), DATA,
                  trailers (valid);
  ctl_not_settings  the control stream opens only right after a
                  connection's first answer, with GOAWAY first;
  ctl_settings_twice  right after a connection's first answer (in later
                  datagrams): a second SETTINGS on the control stream;
  ctl_data        ... a DATA frame on the control stream;
  ctl_closed      ... the control stream's FIN;
  ctl_second      ... a second control stream;
  push_stream     ... a push stream (the client sent no MAX_PUSH_ID);
  qpack_capacity  ... a QPACK encoder stream setting the dynamic table
                  capacity to 4096 (the client advertised 0);
  one_stream      one request stream at a time (initial_max_streams_bidi
                  1, raised by one as each ends), each answered ok after
                  150 ms;
  retry           every answer ok, behind a Retry packet (address
                  validation) on every connection;
  unknown         reserved setting, frame types on the control stream and
                  in every response, reserved and unknown stream types
                  opened by the server; every answer otherwise ok;
  endless         a 200 head then 1000-byte DATA frames every 10 ms, until
                  the client stops or resets the stream;
  trickle         every answer sent one byte per datagram, 10 ms apart;
  reset_headers   the 200 head, then 20 ms later RESET_STREAM
                  (H3_REQUEST_CANCELLED);
  uni_flood       3000 unidirectional streams (a reserved type and FIN)
                  opened at once on each connection, as the client's
                  limits let them out; every answer ok;
  garbage         before each answer, four garbage datagrams to the
                  client's address from the server's port;
  field           every answer 200 with the field NAME: VALUE (a literal
                  name), then an OpenAI-style event stream in one DATA
                  frame (one content chunk, [DONE]).

At exit (stdin closed, or after SECONDS, default 60) it prints one line
per connection: "conn HANDSHAKEN REQUESTS CLOSE UNI GRANTED", CLOSE the
connection's close code in hex as the peer (or the server) gave it, or
"-", UNI the unidirectional streams it opened (or queued), GRANTED the
client's last unidirectional stream limit (MAX_STREAMS).
"""

import asyncio
import os
import sys

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (
    HandshakeCompleted,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
)

# Frame types (RFC 9114 section 7.2).
DATA, HEADERS, SETTINGS, GOAWAY = 0x00, 0x01, 0x04, 0x07
# Unidirectional stream types (RFC 9114 section 6.2).
CONTROL, PUSH = 0x00, 0x01
H3_REQUEST_CANCELLED = 0x10C
# Reserved ("grease") values: 0x1f * N + 0x21 (RFC 9114 sections 6.2.3, 7.2.8, 7.2.4.1).
GREASE = [0x1F * n + 0x21 for n in range(4)]

BAD_EVEN = {
    "big_headers",
    "dynamic_ref",
    "bad_huffman",
    "upper_name",
    "no_status",
    "status_abc",
    "data_after_trailers",
    "headers_after_trailers",
    "data_after_1xx",
}
VIOLATIONS = {
    "ctl_not_settings",
    "ctl_settings_twice",
    "ctl_data",
    "ctl_closed",
    "ctl_second",
    "push_stream",
    "qpack_capacity",
}
# QPACK's unidirectional stream types (RFC 9204 section 4.2).
QPACK_ENCODER = 0x02


def varint(v):
    """A QUIC variable-length integer (RFC 9000 section 16)."""
    if v < 1 << 6:
        return bytes([v])
    if v < 1 << 14:
        return (v | 0x4000).to_bytes(2, "big")
    if v < 1 << 30:
        return (v | 0x8000_0000).to_bytes(4, "big")
    return (v | 0xC000_0000_0000_0000).to_bytes(8, "big")


def frame(ty, payload=b""):
    return varint(ty) + varint(len(payload)) + payload


def qint(value, bits, flags):
    """A QPACK/HPACK prefixed integer (RFC 7541 section 5.1)."""
    mask = (1 << bits) - 1
    if value < mask:
        return bytes([flags | value])
    out = [flags | mask]
    value -= mask
    while value >= 0x80:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def qstr(s, bits=7, flags=0):
    """A string literal, not Huffman-coded."""
    return qint(len(s), bits, flags) + s


def static_name(index, value):
    """Literal field line with a static name reference (RFC 9204 4.5.4): 01NT."""
    return qint(index, 4, 0x50) + qstr(value)


def literal_name(name, value):
    """Literal field line with a literal name (RFC 9204 4.5.6): 001NH."""
    return qstr(name, 3, 0x20) + qstr(value)


PREFIX = b"\x00\x00"  # Required Insert Count 0, Base 0.
STATUS_200 = qint(25, 6, 0xC0)  # indexed static field line 25: ":status 200".
CONTENT_LENGTH_2 = static_name(4, b"2")  # static 4: "content-length".
BODY = b"ok"
OK_HEAD = frame(HEADERS, PREFIX + STATUS_200 + CONTENT_LENGTH_2)
OK = OK_HEAD + frame(DATA, BODY)
# For the answers with trailers: a 200 head without content-length, an
# informational 103 head (indexed static 24), a trailer section.
HEAD_200 = frame(HEADERS, PREFIX + STATUS_200)
HEAD_103 = frame(HEADERS, PREFIX + qint(24, 6, 0xC0))
TRAILERS = frame(HEADERS, PREFIX + literal_name(b"x-trailer", b"1"))
# A valid answer with all of them: 103, 200, DATA, trailers.
INFORMATIONAL = HEAD_103 + HEAD_200 + frame(DATA, BODY) + TRAILERS


# The event stream of the field mode.
SSE = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'


def bad_answer(mode):
    """A broken answer, by mode: the whole stream."""
    if mode == "data_after_trailers":
        return HEAD_200 + frame(DATA, BODY) + TRAILERS + frame(DATA, BODY)
    if mode == "headers_after_trailers":
        return HEAD_200 + frame(DATA, BODY) + TRAILERS + TRAILERS
    if mode == "data_after_1xx":
        return HEAD_103 + frame(DATA, BODY) + OK
    return bad_head(mode) + frame(DATA, BODY)


def bad_head(mode):
    """The head of a broken answer, by mode."""
    if mode == "big_headers":
        return frame(HEADERS, PREFIX + STATUS_200 + literal_name(b"x-big", b"a" * 20000))
    if mode == "dynamic_ref":
        # Encoded Required Insert Count 2 (RIC 1), Base 0, then an indexed
        # field line into the dynamic table (T=0), relative index 0.
        return frame(HEADERS, b"\x02\x00\x80")
    if mode == "bad_huffman":
        # content-length with a Huffman value of 32 one bits: holds EOS.
        return frame(HEADERS, PREFIX + STATUS_200 + qint(4, 4, 0x50) + b"\x84\xff\xff\xff\xff")
    if mode == "upper_name":
        return frame(HEADERS, PREFIX + STATUS_200 + literal_name(b"X-Upper", b"1"))
    if mode == "no_status":
        return frame(HEADERS, PREFIX + CONTENT_LENGTH_2)
    if mode == "status_abc":
        return frame(HEADERS, PREFIX + static_name(24, b"abc") + CONTENT_LENGTH_2)
    raise ValueError(mode)


class Server(QuicConnectionProtocol):
    mode = "ok"
    field = (b"", b"")
    requests = 0
    all = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.handshaken = False
        self.muted = False
        self.served = 0
        self.seen = set()
        self.stopped = set()
        self.control = None
        self.uni = 0
        self.addr = None
        if Server.mode == "one_stream":
            # aioquic has no setting for it: its limit, before the
            # handshake sends it in the transport parameters.
            self._quic._local_max_streams_bidi.value = 1
            self._quic._local_max_streams_bidi.sent = 1
        Server.all.append(self)

    # The idle mode's silence: nothing read or sent once the handshake is done.
    def datagram_received(self, data, addr):
        if self.muted:
            return
        self.addr = addr
        super().datagram_received(data, addr)
        if self.handshaken and Server.mode == "idle":
            self.muted = True

    def transmit(self):
        if not self.muted:
            super().transmit()

    def open_uni(self, data, end=False):
        sid = self._quic.get_next_available_stream_id(is_unidirectional=True)
        self._quic.send_stream_data(sid, data, end_stream=end)
        self.uni += 1
        return sid

    def quic_event_received(self, event):
        mode = Server.mode
        if isinstance(event, HandshakeCompleted):
            self.handshaken = True
            if mode == "idle":
                return
            if mode != "ctl_not_settings":
                settings = b""
                if mode == "unknown":
                    settings = varint(GREASE[1]) + varint(7)
                ctl = bytes([CONTROL]) + frame(SETTINGS, settings)
                if mode == "unknown":
                    ctl += frame(GREASE[0], b"xyz") + frame(0x30, b"")
                self.control = self.open_uni(ctl)
            if mode == "unknown":
                self.open_uni(varint(GREASE[2]) + b"reserved stream", end=True)
                self.open_uni(varint(0x54) + b"unknown type, left open")
            if mode == "uni_flood":
                for _ in range(3000):
                    self.open_uni(varint(GREASE[0]), end=True)
        elif isinstance(event, StreamDataReceived):
            sid = event.stream_id
            if sid % 4 == 0 and event.end_stream and sid not in self.seen:
                self.seen.add(sid)
                Server.requests += 1
                self.served += 1
                self.request(sid, Server.requests, self.served)
        elif isinstance(event, (StopSendingReceived, StreamReset)):
            self.stopped.add(event.stream_id)

    def request(self, sid, n, on_conn):
        mode = Server.mode
        loop = asyncio.get_running_loop()
        q = self._quic
        if mode in BAD_EVEN and n % 2 == 0:
            q.send_stream_data(sid, bad_answer(mode), end_stream=True)
        elif mode == "informational":
            q.send_stream_data(sid, INFORMATIONAL, end_stream=True)
        elif mode == "field":
            head = frame(HEADERS, PREFIX + STATUS_200 + literal_name(*Server.field))
            q.send_stream_data(sid, head + frame(DATA, SSE), end_stream=True)
        elif mode == "unknown":
            out = frame(GREASE[0], b"r" * 5) + OK_HEAD + frame(GREASE[2], b"")
            out += frame(DATA, BODY) + frame(GREASE[3], b"zz")
            q.send_stream_data(sid, out, end_stream=True)
        elif mode == "endless":
            q.send_stream_data(sid, frame(HEADERS, PREFIX + STATUS_200))
            self.endless(sid, 0)
            return
        elif mode == "one_stream":
            loop.call_later(0.150, self.answer, sid)
            return
        elif mode == "trickle":
            self.trickle(sid, OK, 0)
            return
        elif mode == "reset_headers":
            q.send_stream_data(sid, OK_HEAD)
            loop.call_later(0.020, self.reset, sid)
        elif mode == "garbage":
            if self.addr is not None:
                for g in (
                    os.urandom(1200),
                    b"\x40" + os.urandom(60),
                    b"\xc0\xde\xad\xbe\xef" + os.urandom(40),
                    b"\x01",
                ):
                    self._transport.sendto(g, self.addr)
            q.send_stream_data(sid, OK, end_stream=True)
        else:
            q.send_stream_data(sid, OK, end_stream=True)
            if mode in VIOLATIONS and on_conn == 1:
                # The answer in its own datagrams first, so the client has
                # read it whole before it sees the violation.
                self.transmit()
                self.violate()
        self.transmit()

    def violate(self):
        mode = Server.mode
        if mode == "ctl_not_settings":
            self.control = self.open_uni(bytes([CONTROL]) + frame(GOAWAY, varint(0)))
        elif mode == "ctl_settings_twice":
            self._quic.send_stream_data(self.control, frame(SETTINGS))
        elif mode == "ctl_data":
            self._quic.send_stream_data(self.control, frame(DATA, b"x"))
        elif mode == "ctl_closed":
            self._quic.send_stream_data(self.control, b"", end_stream=True)
        elif mode == "ctl_second":
            self.open_uni(bytes([CONTROL]) + frame(SETTINGS))
        elif mode == "push_stream":
            self.open_uni(bytes([PUSH]) + varint(0) + OK)
        elif mode == "qpack_capacity":
            # Set Dynamic Table Capacity (001, 5-bit prefix) 4096.
            self.open_uni(bytes([QPACK_ENCODER]) + qint(4096, 5, 0x20))
        self.transmit()

    def endless(self, sid, i):
        if sid in self.stopped or i >= 3000:
            return
        try:
            self._quic.send_stream_data(sid, frame(DATA, b"x" * 1000))
        except Exception:
            return
        self.transmit()
        asyncio.get_running_loop().call_later(0.010, self.endless, sid, i + 1)

    def trickle(self, sid, data, at):
        if sid in self.stopped:
            return
        try:
            last = at + 1 == len(data)
            self._quic.send_stream_data(sid, data[at : at + 1], end_stream=last)
        except Exception:
            return
        self.transmit()
        if not last:
            asyncio.get_running_loop().call_later(0.010, self.trickle, sid, data, at + 1)

    def answer(self, sid):
        self._quic.send_stream_data(sid, OK, end_stream=True)
        self.transmit()

    def reset(self, sid):
        try:
            self._quic.reset_stream(sid, H3_REQUEST_CANCELLED)
        except Exception:
            return
        self.transmit()


async def main():
    cert, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    Server.mode = mode
    if len(sys.argv) > 6:
        Server.field = (sys.argv[5].encode(), sys.argv[6].encode())
    config = QuicConfiguration(is_client=False, alpn_protocols=["h3"])
    if mode == "idle":
        config.idle_timeout = 0.3
    config.load_cert_chain(cert, key)
    server = await serve(
        "127.0.0.1", 0, configuration=config, create_protocol=Server, retry=mode == "retry"
    )
    port = server._transport.get_extra_info("sockname")[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    try:
        await asyncio.wait_for(stdin_closed, seconds)
    except asyncio.TimeoutError:
        pass
    for c in Server.all:
        close = c._quic._close_event
        code = "-" if close is None else "%#x" % close.error_code
        granted = c._quic._remote_max_streams_uni
        print("conn", int(c.handshaken), c.served, code, c.uni, granted, flush=True)
    server.close()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
