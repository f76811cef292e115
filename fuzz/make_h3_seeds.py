#!/usr/bin/env python3
"""Seeds for the h3_frame and qpack fuzz targets, cut from the golden data
of core/tests/data/h3_golden.json (made with pylsqpack and aioquic by
core/tools/make_h3_golden.py).

h3_frame input: one byte (bit 7: a control stream, else a request stream;
bits 0-6: where to split) + the stream's bytes. Seeds: each response
stream of at most 4 kB, and the control stream without its type byte.
qpack input: a field section. Seeds: each section of those responses, the
refused ones, and a few static entries.

Run from fuzz/: python3 make_h3_seeds.py
"""
import json
import os

HERE = os.path.dirname(__file__) or "."
GOLDEN = os.path.join(HERE, "..", "core", "tests", "data", "h3_golden.json")


def varint(b, at):
    n = 1 << (b[at] >> 6)
    v = b[at] & 0x3F
    for x in b[at + 1:at + n]:
        v = (v << 8) | x
    return v, at + n


def frames(wire):
    at = 0
    while at < len(wire):
        ty, at = varint(wire, at)
        n, at = varint(wire, at)
        yield ty, wire[at:at + n]
        at += n


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


g = json.load(open(GOLDEN))
for i, r in enumerate(g["responses"]):
    wire = bytes.fromhex(r["wire"])
    if len(wire) <= 4096:
        write("h3_frame", "response%d" % i, bytes([64]) + wire)
    for j, (ty, payload) in enumerate(frames(wire)):
        if ty == 1:
            write("qpack", "response%d_%d" % (i, j), payload)
control = bytes.fromhex(g["control"]["wire"])[1:]
write("h3_frame", "control", bytes([0x80 | 64]) + control)
for i, r in enumerate(g["refused"]):
    write("qpack", "refused%d" % i, bytes.fromhex(r["block"]))
for i in (0, 25, 62, 63, 98):
    write("qpack", "static%d" % i, bytes.fromhex(g["static_entries"][i]["block"]))
