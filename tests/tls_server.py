#!/usr/bin/env python3
"""A small HTTPS server on Python's ssl module (OpenSSL), for the end-to-end
TLS tests of tests/e2e/tls_peer/: a TLS stack metronome did not write.

    tls_server.py CERT KEY [--client-ca FILE] [--tls12-ciphers LIST]
                  [--tls11] [--alpn LIST] [--seconds N]

Listens on 127.0.0.1 with an ephemeral port and prints `PORT` as its first
line on stdout; answers every HTTP/1.1 request with `200 ok` (keep-alive).
With --client-ca it requires a client certificate signed by (or equal to)
one of FILE's certificates. --tls12-ciphers serves TLS 1.2 only, with the
OpenSSL cipher list LIST; --tls11 serves TLS 1.1 only; --alpn offers the
comma-separated ALPN protocols LIST (default: no ALPN). It stops by itself after N seconds (default 30)
or when its stdin closes, whichever comes first.
"""

import argparse
import socket
import ssl
import sys
import threading
import time
import warnings


def serve_connection(sock, context):
    try:
        sock.settimeout(10)
        tls = context.wrap_socket(sock, server_side=True)
    except (OSError, ssl.SSLError):
        sock.close()
        return
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                data = tls.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(buf) < length:
                data = tls.recv(65536)
                if not data:
                    return
                buf += data
            buf = buf[length:]
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        try:
            tls.close()
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("--client-ca")
    parser.add_argument("--tls12-ciphers")
    parser.add_argument("--tls11", action="store_true")
    parser.add_argument("--alpn")
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    if args.tls12_ciphers:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        context.set_ciphers(args.tls12_ciphers)
    if args.tls11:
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
        context.minimum_version = ssl.TLSVersion.TLSv1_1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    if args.alpn:
        context.set_alpn_protocols(args.alpn.split(","))
    if args.client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(args.client_ca)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    listener.settimeout(0.1)
    print(listener.getsockname()[1], flush=True)

    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    deadline = time.monotonic() + args.seconds
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        except OSError:
            break
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(
            target=serve_connection, args=(sock, context), daemon=True
        ).start()
    listener.close()


if __name__ == "__main__":
    main()
