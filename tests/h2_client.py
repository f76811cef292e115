#!/usr/bin/env python3
"""An HTTP/2 client on Python's `h2` package (4.x), for tests/e2e/serve_h2.rs:
an HTTP/2 implementation metronome did not write, driving `serve --http2`.

    h2_client.py PORT SPEC_JSON

SPEC_JSON: {"tls": false, "window": null, "sequential": false,
            "requests": [{"method": "GET", "path": "/", "headers": [[k, v]],
                          "body": "text" | "body_len": N | "grpc": true}]}

All requests go over one connection (h2c with prior knowledge, or TLS with
ALPN h2 when "tls"); at once (every HEADERS before any body), or one after
the other's end when "sequential". "window" sets the client's
SETTINGS_INITIAL_WINDOW_SIZE (after the server acknowledged it, the
requests go out) and the client returns received DATA only stream by
stream, frame by frame, so the server must respect a tiny window.

Prints one JSON object: the ALPN protocol, the server's
MAX_CONCURRENT_STREAMS, and per request (in order): status, headers,
body (latin-1), each DATA frame's size and arrival (seconds after the
request was sent), trailers, a reset code, and when the stream ended
("end", seconds after the request was sent); "sent_at" and "end_at" are
the same instants in seconds after the connection opened.
Stops after 20 seconds at most.
"""

import json
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

DEADLINE_S = 20


def main():
    port = int(sys.argv[1])
    spec = json.loads(sys.argv[2])
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    alpn = None
    if spec.get("tls"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2", "http/1.1"])
        sock = context.wrap_socket(sock, server_hostname="localhost")
        alpn = sock.selected_alpn_protocol()
    client = Client(sock, spec.get("window"))
    client.run(spec["requests"], spec.get("sequential", False))
    print(
        json.dumps(
            {
                "alpn": alpn,
                "max_concurrent_streams": client.max_streams,
                "goaway": client.goaway,
                "responses": client.results(),
            }
        )
    )


class Client:
    def __init__(self, sock, window):
        self.sock = sock
        self.window = window
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self.start = time.monotonic()
        self.streams = {}  # stream id -> result dict
        self.order = []
        self.max_streams = None
        self.settings_acked = False
        self.goaway = None
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings(
                {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window}
            )
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self):
        """Reads once and handles what arrived."""
        if time.monotonic() - self.start > DEADLINE_S:
            raise TimeoutError("h2_client: deadline passed")
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("h2_client: the server closed the connection")
        now = time.monotonic()
        for event in self.conn.receive_data(data):
            self.handle(event, now)
        self.flush()

    def handle(self, event, now):
        result = self.streams.get(getattr(event, "stream_id", None))
        if isinstance(event, h2.events.RemoteSettingsChanged):
            self.max_streams = self.conn.remote_settings.max_concurrent_streams
        elif isinstance(event, h2.events.SettingsAcknowledged):
            self.settings_acked = True
        elif isinstance(event, h2.events.ResponseReceived):
            result["status"] = int(dict(event.headers)[b":status"])
            result["headers"] = [[k.decode(), v.decode()] for k, v in event.headers]
        elif isinstance(event, h2.events.DataReceived):
            result["body"] += event.data.decode("latin-1")
            result["data_frames"].append(len(event.data))
            result["data_times"].append(now - result["sent"])
            n = event.flow_controlled_length
            if n:
                self.conn.increment_flow_control_window(n)
                if not event.stream_ended:
                    try:
                        self.conn.increment_flow_control_window(n, event.stream_id)
                    except h2.exceptions.StreamClosedError:
                        pass
        elif isinstance(event, h2.events.TrailersReceived):
            result["trailers"] = [[k.decode(), v.decode()] for k, v in event.headers]
        elif isinstance(event, h2.events.StreamEnded):
            result["end"] = now - result["sent"]
        elif isinstance(event, h2.events.StreamReset):
            result["reset"] = int(event.error_code)
            result["end"] = now - result["sent"]
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = int(event.error_code)

    def done(self, sid):
        return self.streams[sid]["end"] is not None

    def open(self, request):
        sid = self.conn.get_next_available_stream_id()
        headers = [
            (":method", request.get("method", "GET")),
            (":scheme", "https" if isinstance(self.sock, ssl.SSLSocket) else "http"),
            (":authority", "localhost"),
            (":path", request.get("path", "/")),
        ]
        body = request.get("body", "").encode()
        if "body_len" in request:
            body = b"x" * request["body_len"]
        if request.get("grpc"):
            headers += [("content-type", "application/grpc"), ("te", "trailers")]
            body = b"\x00\x00\x00\x00\x00"
        headers += [tuple(h) for h in request.get("headers", [])]
        if body:
            headers.append(("content-length", str(len(body))))
        self.conn.send_headers(sid, headers, end_stream=not body)
        self.streams[sid] = {
            "stream_id": sid,
            "status": None,
            "headers": [],
            "body": "",
            "data_frames": [],
            "data_times": [],
            "trailers": None,
            "reset": None,
            "end": None,
            "sent": time.monotonic(),
        }
        self.order.append(sid)
        self.flush()
        return sid, body

    def send_body(self, sid, body):
        """Sends `body` as the server's windows allow, reading meanwhile."""
        while body:
            window = min(
                self.conn.local_flow_control_window(sid),
                self.conn.max_outbound_frame_size,
            )
            if window <= 0:
                self.pump()
                continue
            chunk, body = body[:window], body[window:]
            self.conn.send_data(sid, chunk, end_stream=not body)
            self.flush()

    def run(self, requests, sequential):
        while self.max_streams is None or (
            self.window is not None and not self.settings_acked
        ):
            self.pump()
        if sequential:
            for request in requests:
                sid, body = self.open(request)
                self.send_body(sid, body)
                while not self.done(sid):
                    self.pump()
        else:
            opened = [self.open(request) for request in requests]
            for sid, body in opened:
                self.send_body(sid, body)
            while not all(self.done(sid) for sid, _ in opened):
                self.pump()
        self.conn.close_connection()
        self.flush()

    def results(self):
        out = []
        for sid in self.order:
            result = dict(self.streams[sid])
            result["sent_at"] = result.pop("sent") - self.start
            if result["end"] is not None:
                result["end_at"] = result["sent_at"] + result["end"]
            out.append(result)
        return out


if __name__ == "__main__":
    main()
