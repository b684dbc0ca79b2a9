"""Instructions a NetworkClient spends per request on its request path, counted by callgrind (no broker, one thread:
repeatable to a few instructions, where the producer's I/O thread's count moves by thousands between runs).

    .venv/bin/python bench/client_send_callgrind.py                 # 1000 requests, then 2000
    PYKAFKA_NO_NATIVE=1 .venv/bin/python bench/client_send_callgrind.py

A NetworkClient on a real Selector, its one node's channel registered over a socket pair (READY at once, no ApiVersions
exchange), sends N and then 2N Heartbeat requests, each one ``ready()``, ``new_client_request()``, ``send()`` and a
``poll(0)`` that reports the send complete; the peer's end is drained and the request taken out of flight after each.
The process's instructions of the 2N run minus those of the N run, divided by N, is the cost per request (the
Heartbeat's frame is encoded by the reference encoder: a fixed part of the count).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def child(requests: int) -> None:
    """Run under valgrind: send ``requests`` requests."""
    import socket

    from pykafka_client.network.metadata_updater import ManualMetadataUpdater
    from pykafka_client.network.network_client import NetworkClient
    from pykafka_client.network.transport.selector import Selector
    from pykafka_client.protocol.messages import HeartbeatRequest
    from pykafka_client.structs import Node

    node = Node(0, "localhost", 9092)
    selector = Selector()
    client = NetworkClient(selector, metadata_updater=ManualMetadataUpdater([node]), discover_broker_versions=False)
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    selector.register(node.id_string, ours)
    client.connection_states.connecting(node.id_string, 0, node.host)
    client.connection_states.ready(node.id_string)
    body = HeartbeatRequest("g", 1, "m")
    for _ in range(requests):
        now = client.time.hi_res_clock_ms()
        if not client.ready(node, now):
            raise SystemExit("the node is not ready")
        client.send(client.new_client_request(node.id_string, body, now), now)
        client.poll(0, now)
        try:
            while theirs.recv(65536):
                pass
        except BlockingIOError:
            pass
        client.in_flight_requests.take_oldest_or_none(node.id_string)
    selector.close()
    theirs.close()


def _instructions(requests: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
             "--child", str(requests)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": ROOT},
        )
        with open(out, encoding="utf-8") as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
    raise SystemExit("no totals in the callgrind output")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child)
        return
    n = args.requests
    one, two = _instructions(n), _instructions(2 * n)
    kernel = "pure Python" if os.environ.get("PYKAFKA_NO_NATIVE", "") not in ("", "0") else "C kernel"
    print(f"{kernel}: {(two - one) / n:,.0f} instructions per request (ready, new_client_request, send, poll)")


if __name__ == "__main__":
    main()
