#!/usr/bin/env python3
"""An HTTP/3 client on aioquic (1.7.2), for tests/e2e/serve_h3.rs: an
HTTP/3 and QUIC implementation metronome did not write, driving
`metronome serve --tls --http3`.

    h3_client.py PORT CAFILE SPEC_JSON

CAFILE: the PEM certificate to trust (the file `serve --cert-out` wrote);
the server is verified as `localhost` (no insecure mode).

SPEC_JSON: {"requests": [{"method": "GET", "path": "/", "headers": [[k, v]],
                          "body": "text"}],
            "uni": ["hex"], "linger": 0, "timeout": 20}

A request may instead give "fields": [[k, v]] (the whole head, no
pseudo-header added) or "raw": "hex" (the request stream's bytes as they
are, then its FIN). Each "uni" entry opens a unidirectional stream with
those bytes (after aioquic's own control and QPACK streams).
{"connections": [SPEC, ...]} runs each SPEC on its own connection, one
after the other, and prints a list of results.

All requests go over one QUIC connection, at once (each on its own
stream, every HEADERS and body sent before any answer is read). After
the last answer the client waits up to "linger" seconds for the server to
close the connection (to see its CONNECTION_CLOSE code); with a linger,
the line "answered" is printed first, once every answer is in.

Prints one JSON object: the ALPN protocol, the server's SETTINGS (by
identifier), per request (in order): stream id, status, headers, body
(latin-1), each DATA piece's arrival (seconds after the request was sent),
a reset code, "sent_at" and "end_at" (seconds after the connection
opened); "close": the code and reason the connection was closed with
by the server, if it was; and "goaway": the server's GOAWAY (read off its
control stream, which aioquic does not report), its stream ID, when it
came and whether before the close, or null. Stops after 20 seconds at
most.
"""

import asyncio
import json
import sys
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (
    ConnectionTerminated,
    ProtocolNegotiated,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
)

DEADLINE_S = 20


def varint(buf, at):
    """The QUIC varint at `at` in `buf`: (the offset after it, its value),
    or (None, None) when it is not all there."""
    if at is None or at >= len(buf):
        return None, None
    n = 1 << (buf[at] >> 6)
    if at + n > len(buf):
        return None, None
    value = buf[at] & 0x3F
    for b in buf[at + 1 : at + n]:
        value = (value << 8) | b
    return at + n, value


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.origin = time.monotonic()
        self.streams = {}
        self.alpn = None
        self.closed_by = None
        self.changed = asyncio.Event()
        # The server's unidirectional streams' bytes so far, and its GOAWAY.
        self.server_uni = {}
        self.goaway = None

    def now(self):
        return time.monotonic() - self.origin

    def control_frames(self, stream_id, data):
        """Reads the server's control stream (type 0x00) frame by frame
        and keeps its GOAWAY: its stream ID, when, and whether the
        connection was still open."""
        buf = self.server_uni.get(stream_id, b"") + data
        self.server_uni[stream_id] = buf
        at, kind = varint(buf, 0)
        if kind != 0:
            return
        while at is not None:
            at, ty = varint(buf, at)
            at, length = varint(buf, at)
            if at is None or at + length > len(buf):
                return
            if ty == 0x07:
                self.goaway = {
                    "id": varint(buf, at)[1],
                    "at": self.now(),
                    "before_close": self.closed_by is None,
                }
            at += length

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived) and event.stream_id % 4 == 3:
            self.control_frames(event.stream_id, event.data)
        if isinstance(event, ProtocolNegotiated):
            self.alpn = event.alpn_protocol
        elif isinstance(event, ConnectionTerminated):
            self.closed_by = {
                "code": event.error_code,
                "reason": event.reason_phrase,
                "at": self.now(),
            }
        elif isinstance(event, StopSendingReceived):
            r = self.streams.get(event.stream_id)
            if r is not None:
                r["stopped"] = event.error_code
        elif isinstance(event, StreamReset):
            r = self.streams.get(event.stream_id)
            if r is not None:
                r["reset"] = event.error_code
                r["end_at"] = self.now()
        for ev in self.h3.handle_event(event):
            r = self.streams.get(getattr(ev, "stream_id", None))
            if r is None:
                continue
            if isinstance(ev, HeadersReceived):
                fields = [[k.decode(), v.decode("latin-1")] for k, v in ev.headers]
                if r["status"] is None:
                    status = dict(ev.headers).get(b":status")
                    r["status"] = int(status) if status else None
                    r["headers"] = fields
                else:
                    r["trailers"] = fields
            elif isinstance(ev, DataReceived):
                if ev.data:
                    r["body"] += ev.data.decode("latin-1")
                    r["data"].append(
                        {"len": len(ev.data), "at": self.now() - r["sent_at"]}
                    )
            if getattr(ev, "stream_ended", False):
                r["end_at"] = self.now()
        self.changed.set()

    def send(self, req):
        sid = self._quic.get_next_available_stream_id()
        body = req.get("body", "").encode()
        if "raw" in req:
            self._quic.send_stream_data(sid, bytes.fromhex(req["raw"]), end_stream=True)
        else:
            if "fields" in req:
                headers = [(k.encode(), v.encode()) for k, v in req["fields"]]
            else:
                headers = [
                    (b":method", req.get("method", "GET").encode()),
                    (b":scheme", b"https"),
                    (b":authority", b"localhost"),
                    (b":path", req.get("path", "/").encode()),
                ] + [(k.encode(), v.encode()) for k, v in req.get("headers", [])]
            self.h3.send_headers(sid, headers, end_stream=not body)
            if body:
                self.h3.send_data(sid, body, end_stream=True)
        self.streams[sid] = {
            "stream_id": sid,
            "status": None,
            "headers": [],
            "trailers": None,
            "body": "",
            "data": [],
            "reset": None,
            "stopped": None,
            "sent_at": self.now(),
            "end_at": None,
        }
        return sid

    def done(self):
        return all(r["end_at"] is not None for r in self.streams.values())


async def run(port, cafile, spec):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(cafile)
    config.server_name = "localhost"
    async with connect(
        "127.0.0.1", port, configuration=config, create_protocol=Client,
        wait_connected=True,
    ) as client:
        for raw in spec.get("uni", []):
            sid = client._quic.get_next_available_stream_id(is_unidirectional=True)
            client._quic.send_stream_data(sid, bytes.fromhex(raw))
        order = [client.send(req) for req in spec["requests"]]
        client.transmit()
        deadline = time.monotonic() + spec.get("timeout", DEADLINE_S)
        while not client.done() and client.closed_by is None:
            client.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                await asyncio.wait_for(client.changed.wait(), left)
            except asyncio.TimeoutError:
                break
        if spec.get("linger", 0) > 0:
            # The caller may stop the server now.
            print("answered", flush=True)
        linger_until = time.monotonic() + spec.get("linger", 0)
        while client.closed_by is None and time.monotonic() < linger_until:
            client.changed.clear()
            try:
                await asyncio.wait_for(
                    client.changed.wait(), linger_until - time.monotonic()
                )
            except asyncio.TimeoutError:
                break
        settings = client.h3.received_settings or {}
        return {
            "alpn": client.alpn,
            "settings": {str(int(k)): v for k, v in settings.items()},
            "responses": [client.streams[sid] for sid in order],
            "close": client.closed_by,
            "goaway": client.goaway,
        }


def main():
    port = int(sys.argv[1])
    cafile = sys.argv[2]
    spec = json.loads(sys.argv[3])
    if "connections" in spec:

        async def each():
            return [await run(port, cafile, one) for one in spec["connections"]]

        result = asyncio.run(each())
    else:
        result = asyncio.run(run(port, cafile, spec))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
