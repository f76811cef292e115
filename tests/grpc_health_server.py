"""A real gRPC server for tests/e2e/grpc.rs: grpcio's own server with the
standard health service (grpc_health.v1.health.HealthServicer) on
127.0.0.1, a free port.

Prints the port on the first line of stdout, then serves until stdin
closes (the test dropped its end) or LIMIT seconds passed (argument 1,
default 120), whichever comes first: it never outlives a test by much.

Check with an empty HealthCheckRequest (service "") answers SERVING,
grpc-status 0; Check for a service it does not know answers NOT_FOUND
(grpc-status 5), as the health protocol says.

Needs grpcio and grpcio-health-checking (tested with 1.85.3 and 1.85.1).
"""

import sys
import threading
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2_grpc


def main():
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    closed = threading.Event()

    def watch_stdin():
        try:
            while sys.stdin.read(4096):
                pass
        finally:
            closed.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    closed.wait(limit)
    server.stop(grace=None)


if __name__ == "__main__":
    main()
