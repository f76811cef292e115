#!/usr/bin/env python3
"""Golden vectors for core's HTTP/3 framing and QPACK (core/src/h3/), made
with implementations nobody here wrote: pylsqpack (the QPACK library, a
binding of LiteSpeed's ls-qpack, that aioquic uses) and aioquic's HTTP/3
frame and varint encoding (aioquic.h3.connection.encode_frame,
encode_settings, aioquic.buffer's encode_uint_var).

    pip install pylsqpack aioquic
    python3 core/tools/make_h3_golden.py            # writes core/tests/data/h3_golden.json
    python3 core/tools/make_h3_golden.py --decode HEX...   # pylsqpack's fields, as JSON

Written (hex for bytes), and checked by core/tests/golden/h3.rs:
- static_entries: each entry of core's QPACK static table (read from
  core/src/h3/qpack.rs) as pylsqpack encodes it alone: an indexed field line
  whose index must be the entry's (checked here), and the bytes core's
  encoder must write.
- responses: server bytes of a request stream (HEADERS from pylsqpack's
  encoder with a dynamic table capacity of 0, DATA, reserved frames,
  trailers; frames by aioquic), and the sections (fields as pylsqpack's
  decoder reads them, :status) and body core must read from them.
- refused: field sections core must refuse, with the code: pylsqpack's
  encoder with a dynamic table (4096 bytes) indexes, and its second
  section references the table (QPACK_DECOMPRESSION_FAILED); an uppercase
  name (H3_MESSAGE_ERROR).
- control: a server's control stream (type, SETTINGS with unknown and
  reserved identifiers, a reserved frame, two GOAWAYs), by aioquic.
- client_frames: what core's writers must put out, as aioquic encodes
  them (the client's control stream opening, GOAWAY, a DATA header).
- requests: request heads core's encoder wrote (OUR_BLOCKS below, raw and
  Huffman), checked here to decode with pylsqpack to the fields they
  encode; the test re-encodes the inputs and compares byte for byte, and
  when python3 with pylsqpack is present, also hands its own output to
  `--decode`.
"""
import json
import os
import re
import sys

import pylsqpack
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import FrameType, Setting, StreamType, encode_frame, encode_settings

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.path.dirname(HERE)
OUT = os.path.join(CORE, "tests", "data", "h3_golden.json")

# The connection-specific fields the encoder drops, and host.
DROPPED = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"}

REQUESTS = [
    {
        "method": "POST", "scheme": "https", "authority": "api.example.com:8443",
        "path": "/v1/chat/completions?stream=true",
        "headers": [["Content-Type", "application/json"], ["Authorization", "Bearer sk-0123456789"],
                    ["te", "trailers"], ["X-Custom-Header", "Mixed Case Value!"],
                    ["Connection", "keep-alive"], ["Host", "api.example.com"]],
        "huffman": False,
    },
    {
        "method": "POST", "scheme": "https", "authority": "api.example.com:8443",
        "path": "/v1/chat/completions?stream=true",
        "headers": [["Content-Type", "application/json"], ["Authorization", "Bearer sk-0123456789"],
                    ["te", "trailers"], ["X-Custom-Header", "Mixed Case Value!"],
                    ["Connection", "keep-alive"], ["Host", "api.example.com"]],
        "huffman": True,
    },
    {
        "method": "GET", "scheme": "http", "authority": "localhost:8080", "path": "/",
        "headers": [["accept", "*/*"], ["user-agent", "metronome/0.1"], ["accept-encoding", "gzip, deflate, br"],
                    ["x-bytes", "".join(chr(c) for c in range(32, 127))]],
        "huffman": True,
    },
]

# core's encode_request output for REQUESTS, in order (hex); printed by
# `cargo test -p metronome-core --test golden h3::` when it differs.
OUR_BLOCKS = [
    "0000d4d750146170692e6578616d706c652e636f6d3a3834343351202f76312f636861742f636f6d706c6574696f6e733f73747265616d3d74727565ee5f4514426"
    "56172657220736b2d3031323334353637383922746508747261696c6572732708782d637573746f6d2d686561646572114d6978656420436173652056616c756521",
    "0000d4d7508f1d665cbe474d7415721e9b8f34d33f519763b85824e34b043d35d05498f523fc426c28e981365a5fee5f458fba51d8"
    "5b144755801132d36e3af3ff227465864d833505b11f2708782d637573746f6d2d6865616465728dd06f25914bc34154e23a2d2ff1",
    "0000d1d6508aa0e41d139d09b8f01e07c1dd5f5089a4a9b0f51e92b005c3df2ef2b47e92547fdd53f8fe7febff2afc7fafebfbf9ff7f4b2ec002265a6dc75e7ee7df"
    "ffc83feffcffd4376f5fc187163c997367d1a756bd9b776fe1c797e73fdffdffff0ffe7ff917ffd1c6490b2cd39ba75a29a8f5f6b109b7bf8f3ebdfffeff9ffefff7",
]


def expected_request_fields(r):
    fields = [[":method", r["method"]], [":scheme", r["scheme"]], [":authority", r["authority"]],
              [":path", r["path"]]]
    for n, v in r["headers"]:
        if n.lower() not in DROPPED:
            fields.append([n.lower(), v])
    return fields


def pylsqpack_decode(block, stream_id=0):
    dec = pylsqpack.Decoder(0, 0)
    control, headers = dec.feed_header(stream_id, block)
    assert control == b"", control
    return [[n.decode("latin-1"), v.decode("latin-1")] for n, v in headers]


def static_table():
    src = open(os.path.join(CORE, "src", "h3", "qpack.rs")).read()
    body = src[src.index("pub const STATIC_TABLE"):]
    body = body[:body.index("];")]
    entries = re.findall(r'\(\s*b"((?:[^"\\]|\\.)*)",\s*b"((?:[^"\\]|\\.)*)",?\s*\)', body)
    assert len(entries) == 99, len(entries)
    out = []
    for i, (name, value) in enumerate(entries):
        enc = pylsqpack.Encoder()
        control, block = enc.encode(0, [(name.encode(), value.encode())])
        assert control == b""
        # Prefix 00 00, then an indexed static field line 11xxxxxx (6-bit prefix).
        if i < 63:
            assert block == bytes([0, 0, 0xC0 | i]), (i, name, value, block.hex())
        else:
            assert block == bytes([0, 0, 0xFF, i - 63]), (i, name, value, block.hex())
        out.append({"name": name, "value": value, "block": block.hex()})
    return out


def frame(ty, payload):
    return encode_frame(ty, payload)


RESPONSES = [
    {
        "name": "plain 200",
        "sections": [[(":status", "200"), ("content-type", "text/plain"), ("content-length", "11"),
                      ("server", "pylsqpack-golden")]],
        "body": [b"hello world"],
    },
    {
        "name": "sse in many DATA frames, a reserved frame between",
        "sections": [[(":status", "200"), ("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                      ("date", "Mon, 21 Oct 2013 20:13:21 GMT")]],
        "body": [b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n', b"", b"data: [DONE]\n\n"],
        "grease_after_headers": True,
    },
    {
        "name": "404 json, long values",
        "sections": [[(":status", "404"), ("content-type", "application/json"), ("set-cookie", "a=" + "z" * 1500),
                      ("cache-control", "no-store"), ("x-empty", "")]],
        "body": [b'{"error":"not found"}', b"x" * 20000],
    },
    {
        "name": "429 not in the table, odd bytes",
        "sections": [[(":status", "429"), ("retry-after", "1"),
                      ("x-bytes", "".join(chr(c) for c in range(32, 127))), ("alt-svc", "clear"),
                      ("access-control-allow-credentials", "TRUE")]],
        "body": [],
    },
    {
        "name": "103 early hints, then 200",
        "sections": [[(":status", "103"), ("link", "</style.css>; rel=preload; as=style")],
                     [(":status", "200"), ("content-type", "text/html; charset=utf-8")]],
        "body": [b"<html></html>"],
    },
    {
        "name": "grpc with trailers",
        "sections": [[(":status", "200"), ("content-type", "application/grpc")],
                     "BODY",
                     [("grpc-status", "0"), ("grpc-message", "")]],
        "body": [b"\x00\x00\x00\x00\x05hello"],
    },
]


def responses():
    out = []
    for case in RESPONSES:
        enc = pylsqpack.Encoder()  # no apply_settings: dynamic table capacity 0
        wire = b""
        expected = []
        body_written = False
        sections = case["sections"] if "BODY" in case["sections"] else case["sections"] + ["BODY"]
        for s in sections:
            if s == "BODY":
                for piece in case["body"]:
                    wire += frame(FrameType.DATA, piece)
                body_written = True
                continue
            headers = [(n.encode(), v.encode()) for n, v in s]
            control, block = enc.encode(0, headers)
            assert control == b"", control
            fields = pylsqpack_decode(block)
            assert fields == [[n, v] for n, v in s], fields
            status = next((int(v) for n, v in s if n == ":status"), None)
            size = sum(len(n) + len(v) + 32 for n, v in s)
            expected.append({"fields": fields, "status": status, "size": size})
            wire += frame(FrameType.HEADERS, block)
            if case.get("grease_after_headers"):
                wire += frame(0x21, b"grease") + frame(0x1F * 7 + 0x21, b"")
        assert body_written
        out.append({"name": case["name"], "wire": wire.hex(), "sections": expected,
                    "body": b"".join(case["body"]).hex()})
    return out


def refused():
    enc = pylsqpack.Encoder()
    dec = pylsqpack.Decoder(4096, 16)
    settings = enc.apply_settings(4096, 16)
    headers = [(b":status", b"200"), (b"x-session", b"0123456789abcdef"), (b"server", b"golden")]
    enc_stream = b""
    blocks = []
    for sid in (0, 4):
        control, block = enc.encode(sid, headers)
        enc_stream += control
        blocks.append(block)
    dec.feed_encoder(enc_stream)
    # The second section references entries the first inserted.
    assert dec.feed_header(4, blocks[1])[1] == headers
    assert blocks[1][0] != 0, blocks[1].hex()
    upper = pylsqpack.Encoder().encode(0, [(b":status", b"200"), (b"X-Upper", b"1")])[1]
    return [
        {"name": "dynamic reference (pylsqpack with a 4096-byte table)", "block": blocks[1].hex(),
         "encoder_stream": enc_stream.hex(), "settings_applied": settings.hex(), "code": 0x200},
        {"name": "uppercase name", "block": upper.hex(), "code": 0x10E},
    ]


def control():
    settings = {
        Setting.QPACK_MAX_TABLE_CAPACITY: 4096,
        Setting.QPACK_BLOCKED_STREAMS: 16,
        Setting.MAX_FIELD_SECTION_SIZE: 65536,
        Setting.ENABLE_CONNECT_PROTOCOL: 1,
        Setting.H3_DATAGRAM: 1,
        0x1F * 2 + 0x21: 7,
    }
    wire = encode_uint_var(StreamType.CONTROL)
    wire += frame(FrameType.SETTINGS, encode_settings(settings))
    wire += frame(0x21, b"")
    wire += frame(FrameType.GOAWAY, encode_uint_var(8))
    wire += frame(FrameType.GOAWAY, encode_uint_var(4))
    return {"wire": wire.hex(), "stream_type": int(StreamType.CONTROL),
            "settings": [[int(k), v] for k, v in settings.items()], "goaway": [8, 4]}


def client_frames():
    return {
        "control_start_16384": (encode_uint_var(StreamType.CONTROL) + frame(FrameType.SETTINGS, encode_settings(
            {Setting.QPACK_MAX_TABLE_CAPACITY: 0, Setting.QPACK_BLOCKED_STREAMS: 0,
             Setting.MAX_FIELD_SECTION_SIZE: 16384}))).hex(),
        "goaway_0": frame(FrameType.GOAWAY, encode_uint_var(0)).hex(),
        "data_header_1000": frame(FrameType.DATA, b"\x00" * 1000)[:3].hex(),
        "data_header_100000": frame(FrameType.DATA, b"\x00" * 100000)[:5].hex(),
        "headers_of_plain_200": frame(FrameType.HEADERS, bytes.fromhex("0000d9")).hex(),
    }


def requests():
    assert len(OUR_BLOCKS) == len(REQUESTS), "paste core's encodings into OUR_BLOCKS"
    out = []
    for r, block in zip(REQUESTS, OUR_BLOCKS):
        want = expected_request_fields(r)
        got = pylsqpack_decode(bytes.fromhex(block))
        assert got == want, (got, want)
        out.append({**r, "ours": block, "fields": want})
    return out


def main():
    if sys.argv[1:2] == ["--decode"]:
        print(json.dumps([pylsqpack_decode(bytes.fromhex(h)) for h in sys.argv[2:]]))
        return
    import aioquic
    doc = {
        "generated_by": {"pylsqpack": pylsqpack.__version__, "aioquic": aioquic.__version__,
                         "python": sys.version.split()[0], "script": "core/tools/make_h3_golden.py"},
        "static_entries": static_table(),
        "responses": responses(),
        "refused": refused(),
        "control": control(),
        "client_frames": client_frames(),
        "requests": requests() if OUR_BLOCKS else [{**r, "ours": None, "fields": expected_request_fields(r)}
                                                   for r in REQUESTS],
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
