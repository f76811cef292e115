#!/usr/bin/env python3
"""Seeds for the h2_frame and hpack fuzz targets, cut from the golden data
of core/tests/data/h2/ (made with Python's h2 and hpack by gen.py there).

h2_frame input: one byte (where to split) + server bytes. Seeds: the
server's first SETTINGS followed by each other frame of server.bin, and all
of server.bin but its 21 kB header block (HEADERS + CONTINUATION).
hpack input: one byte (block length - 1, mod 64) + blocks. Seeds: each
block of hpack_blocks.bin of at most 64 bytes, and the first 4 kB whole.

Run from fuzz/: python3 make_h2_seeds.py
"""
import json
import os

DATA = os.path.join(os.path.dirname(__file__), "..", "core", "tests", "data", "h2")
HERE = os.path.dirname(__file__) or "."


def frames(wire):
    at = 0
    while at + 9 <= len(wire):
        n = int.from_bytes(wire[at:at + 3], "big")
        yield wire[at:at + 9 + n]
        at += 9 + n


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


server = open(os.path.join(DATA, "server.bin"), "rb").read()
fs = list(frames(server))
first = fs[0]
small = [f for f in fs if len(f) <= 4096]
for i, f in enumerate(fs[1:], 1):
    if len(f) <= 4096:
        write("h2_frame", "frame%02d" % i, bytes([128]) + first + f)
write("h2_frame", "all_small", bytes([100]) + b"".join(small))

blocks = open(os.path.join(DATA, "hpack_blocks.bin"), "rb").read()
meta = json.load(open(os.path.join(DATA, "hpack_blocks.json")))
for i, b in enumerate(meta["blocks"]):
    if b["len"] <= 64:
        block = blocks[b["offset"]:b["offset"] + b["len"]]
        write("hpack", "block%d" % i, bytes([b["len"] - 1]) + block)
write("hpack", "first4k", bytes([63]) + blocks[:4095])
