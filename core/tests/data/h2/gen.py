#!/usr/bin/env python3
"""Golden vectors for metronome's HTTP/2 client, made by implementations
nobody here wrote: Python's `hpack` (4.x) and `h2` (4.x) packages.

    pip install h2==4.4.1 hpack==4.2.0   # the versions used, also in the JSON
    python3 core/tests/data/h2/gen.py

Writes, next to this script:
- hpack_blocks.bin / hpack_blocks.json: header blocks from hpack's Encoder
  (Huffman, dynamic-table indexing, evictions, a table-size change), each
  with the header list it encodes and the decoder's table size after it.
- our_encoder.json: two request blocks metronome's encoder wrote (raw and
  Huffman), checked here to decode with hpack to the request they encode.
- server.bin / server.json: the bytes an h2 server connection sends to a
  client that opened streams 1, 3, 5, 7 and 9 (client bytes made by an h2
  client connection), and the events metronome's client must report.
"""
import json
import os
import sys

import h2
import h2.config
import h2.connection
import h2.errors
import h2.settings
import hpack

HERE = os.path.dirname(os.path.abspath(__file__))


def hpack_vectors():
    enc = hpack.Encoder()
    dec = hpack.Decoder()
    lists = [
        [(":status", "200"), ("content-type", "text/event-stream"), ("server", "h2-golden"),
         ("date", "Mon, 21 Oct 2013 20:13:21 GMT")],
        [(":status", "200"), ("content-type", "text/event-stream"), ("server", "h2-golden"),
         ("date", "Mon, 21 Oct 2013 20:13:22 GMT"), ("x-request-id", "0123456789abcdef")],
        [(":status", "404"), ("content-type", "application/json"), ("content-length", "17"),
         ("set-cookie", "a=" + "z" * 1500), ("cache-control", "no-store")],
        [(":status", "503"), ("retry-after", "1"), ("set-cookie", "b=" + "y" * 2500),
         ("grpc-status", "14"), ("grpc-message", "unavailable")],
        [(":status", "200"), ("content-type", "application/grpc"), ("te", "trailers"),
         ("x-bytes", "".join(chr(c) for c in range(33, 127)))],
    ]
    blocks = []
    out = b""
    for i, headers in enumerate(lists):
        if i == 3:
            # The decoder's limit changes: the encoder starts the next
            # block with a dynamic table size update.
            enc.header_table_size = 2048
        if i == 4:
            enc.header_table_size = 4096
        block = enc.encode(headers, huffman=(i % 2 == 0))
        decoded = dec.decode(block, raw=True)
        assert [(n.decode(), v.decode()) for n, v in decoded] == headers
        blocks.append({
            "offset": len(out),
            "len": len(block),
            "fields": headers,
            "table_size": sum(len(n) + len(v) + 32 for n, v in dec.header_table.dynamic_entries),
            "table_len": len(dec.header_table.dynamic_entries),
        })
        out += block
    return out, blocks


def server_vectors():
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.local_settings = h2.settings.Settings(client=True, initial_values={
        h2.settings.SettingCodes.ENABLE_PUSH: 0,
        h2.settings.SettingCodes.HEADER_TABLE_SIZE: 4096,
    })
    client.initiate_connection()
    req = [(":method", "GET"), (":scheme", "http"), (":authority", "localhost"), (":path", "/")]
    for sid in (1, 3, 5, 7, 9):
        client.send_headers(sid, req, end_stream=True)
    to_server = client.data_to_send()

    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    server.initiate_connection()
    server.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 50})
    server.receive_data(to_server)
    events = [{"Ready": None}]
    big = "v" * 20000  # a header block larger than a frame: CONTINUATION
    # Eight fields of 3000 bytes (each indexed, each evicting the one
    # before from a 4096-byte table): a block of about 21 000 bytes, sent
    # as HEADERS + CONTINUATION.
    server.send_headers(1, [(":status", "200"), ("content-type", "text/event-stream")]
                        + [(f"x-big-{i}", big[:3000 - i]) for i in range(8)])
    events.append({"Headers": {"stream": 1, "status": 200, "event_stream": True, "grpc_status": None, "end_stream": False}})
    server.send_data(1, b"data: {\"choices\":[]}\n\n", pad_length=17)
    events.append({"Data": {"stream": 1, "len": 22, "end_stream": False}})
    server.send_headers(3, [(":status", "200"), ("content-type", "application/grpc")])
    events.append({"Headers": {"stream": 3, "status": 200, "event_stream": False, "grpc_status": None, "end_stream": False}})
    server.ping(b"h2golden")
    server.send_data(3, b"\x00\x00\x00\x00\x02\x08\x01")
    events.append({"Data": {"stream": 3, "len": 7, "end_stream": False}})
    server.send_headers(3, [("grpc-status", "0"), ("grpc-message", "")], end_stream=True)
    events.append({"Trailers": {"stream": 3, "grpc_status": 0}})
    server.send_data(1, b"data: [DONE]\n\n", end_stream=True)
    events.append({"Data": {"stream": 1, "len": 14, "end_stream": True}})
    server.send_headers(5, [(":status", "204")], end_stream=True)
    events.append({"Headers": {"stream": 5, "status": 204, "event_stream": False, "grpc_status": None, "end_stream": True}})
    server.reset_stream(7, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
    events.append({"StreamReset": {"stream": 7, "code": 7, "remote": True}})
    server.increment_flow_control_window(1000)
    server.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR, last_stream_id=7)
    events.append({"GoAway": {"last_stream": 7, "code": 0, "refused": 1}})
    return server.data_to_send(), {"events": events, "refused": [9]}


# metronome's own encoder (hpack::encode_request), raw and Huffman, for
# POST https://api.example.com:8443/v1/chat/completions?stream=true with
# Content-Type, Authorization, TE, Connection (dropped) and a custom header.
# golden/h2_python.rs checks the Rust encoder still writes exactly these
# bytes; this script checks that Python's hpack decodes them to this list.
OUR_REQUEST = [(":method", "POST"), (":scheme", "https"), (":authority", "api.example.com:8443"),
               (":path", "/v1/chat/completions?stream=true"), ("content-type", "application/json"),
               ("authorization", "Bearer sk-0123456789"), ("te", "trailers"),
               ("x-custom-header", "Mixed Case Value!")]
OUR_BLOCKS = [
    "838701146170692e6578616d706c652e636f6d3a3834343304202f76312f636861742f636f6d706c6574696f6e733f73747265616d3d"
    "747275650f10106170706c69636174696f6e2f6a736f6e0f081442656172657220736b2d303132333435363738390002746508747261"
    "696c657273000f782d637573746f6d2d686561646572114d6978656420436173652056616c756521",
    "8387018f1d665cbe474d7415721e9b8f34d33f049763b85824e34b043d35d05498f523fc426c28e981365a5f0f108b1d75d0620d263d"
    "4c7441ea0f088fba51d85b144755801132d36e3af3ff00027465864d833505b11f008bf2b12d424f4ad3947216cf8dd06f25914bc341"
    "54e23a2d2ff1",
]


def check_our_encoder():
    for block in OUR_BLOCKS:
        dec = hpack.Decoder()
        fields = [(n.decode(), v.decode()) for n, v in dec.decode(bytes.fromhex(block), raw=True)]
        assert fields == OUR_REQUEST, fields
        # Literals without indexing only: the server's table stays empty.
        assert dec.header_table.dynamic_entries == type(dec.header_table.dynamic_entries)()
    return {"request": OUR_REQUEST, "blocks": OUR_BLOCKS}


def main():
    ours = check_our_encoder()
    with open(os.path.join(HERE, "our_encoder.json"), "w") as f:
        json.dump({"generated_by": {"h2": h2.__version__, "hpack": hpack.__version__}, **ours}, f, indent=1)
        f.write("\n")
    block_bytes, blocks = hpack_vectors()
    versions = {"h2": h2.__version__, "hpack": hpack.__version__, "python": sys.version.split()[0]}
    with open(os.path.join(HERE, "hpack_blocks.bin"), "wb") as f:
        f.write(block_bytes)
    with open(os.path.join(HERE, "hpack_blocks.json"), "w") as f:
        json.dump({"generated_by": versions, "blocks": blocks}, f, indent=1)
        f.write("\n")
    wire, expected = server_vectors()
    with open(os.path.join(HERE, "server.bin"), "wb") as f:
        f.write(wire)
    with open(os.path.join(HERE, "server.json"), "w") as f:
        json.dump({"generated_by": versions, **expected}, f, indent=1)
        f.write("\n")
    print(f"hpack_blocks.bin: {len(block_bytes)} bytes, {len(blocks)} blocks; server.bin: {len(wire)} bytes")


if __name__ == "__main__":
    main()
