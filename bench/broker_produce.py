"""mini_broker's CPU per produce request, with nothing else in its process (not a test).

    .venv/bin/python bench/broker_produce.py                        # acks=1 and all, 1 and 6 partitions
    .venv/bin/python bench/broker_produce.py --acks -1 --partitions 1 --rounds 7

A MiniBroker runs in this process; a child process with a raw socket sends pre-built Produce v11 requests of one
partition each (round-robin over the partitions): ``--records-per-request`` records of 100-byte values (148 by
default: what our producer puts in one request at its default batch.size, 16384), from an idempotent producer,
at most ``--in-flight`` unanswered. The broker process's user+system CPU from the first send to the last answer
is divided by the requests sent; best and median of ``--rounds``. The client's own CPU is not counted (its
process is another), and its requests do not depend on the broker's speed, unlike bench/producer.py's, whose
client puts fewer records in each request when the broker answers sooner. On a shared machine compare best-of
runs of two versions interleaved (e.g. run this file from a worktree of each).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: the child: builds every round's frames before it says "ready", then sends them on "go" and says "done"
CLIENT = r"""
import socket, struct, sys, time
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
port, acks, partitions, requests, in_flight, rounds, per_request = map(int, sys.argv[1:8])
value = b"x" * 100
sequences = {}
def frame(partition, correlation_id):
    seq = sequences.get(partition, 0)
    builder = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=1000, producer_epoch=0, base_sequence=seq)
    for _ in range(per_request):
        builder.append(int(time.time() * 1000), None, value)
    sequences[partition] = seq + per_request
    body = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=builder.build())])])
    return b"".join(bytes(c) for c in headers.encode_request(body, 11, correlation_id, "bench"))
sock = socket.create_connection(("127.0.0.1", port))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
reader = sock.makefile("rb")
for _ in range(rounds):
    frames = [frame(i % partitions, i) for i in range(requests)]
    print("ready", flush=True)
    sys.stdin.readline()
    sent = answered = 0
    while answered < requests:
        while sent < requests and sent - answered < in_flight:
            sock.sendall(frames[sent])
            sent += 1
        size = struct.unpack(">i", reader.read(4))[0]
        assert len(reader.read(size)) == size
        answered += 1
    print("done", flush=True)
"""


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(acks: int, partitions: int, rounds: int, requests: int, in_flight: int, per_request: int) -> list[float]:
    """Broker CPU seconds per request, one value per round."""
    from mini_broker.broker import MiniBroker

    out: list[float] = []
    with MiniBroker() as broker:
        assert broker.replica_manager is not None
        broker.replica_manager.create_topic("t", partitions, {})
        args = [broker.port, acks, partitions, requests, in_flight, rounds, per_request]
        child = subprocess.Popen([sys.executable, "-c", CLIENT, *map(str, args)], cwd=ROOT, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        assert child.stdin is not None and child.stdout is not None
        try:
            for _ in range(rounds):
                if child.stdout.readline().strip() != "ready":
                    raise RuntimeError("the client process failed before its round")
                cpu0 = _cpu_s()
                child.stdin.write("go\n")
                child.stdin.flush()
                if child.stdout.readline().strip() != "done":
                    raise RuntimeError("the client process failed during its round")
                out.append((_cpu_s() - cpu0) / requests)
        finally:
            child.kill()
            child.wait()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--acks", type=int, action="append", help="-1, 1 or 0 (repeatable; default: 1 and -1)")
    ap.add_argument("--partitions", type=int, action="append", help="repeatable; default: 1 and 6")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=500, help="per round")
    ap.add_argument("--in-flight", type=int, default=5)
    ap.add_argument("--records-per-request", type=int, default=148)
    args = ap.parse_args()
    print(f"{args.records_per_request} records x 100 B per request, {args.requests} requests x {args.rounds} rounds,"
          f" {args.in_flight} in flight; broker process CPU (user+system) per request")
    for partitions in args.partitions or [1, 6]:
        for acks in args.acks or [1, -1]:
            per_request = sorted(measure(acks, partitions, args.rounds, args.requests, args.in_flight,
                                         args.records_per_request))
            best, median = per_request[0], per_request[len(per_request) // 2]
            print(f"{partitions}p acks={acks:<3} best {best * 1e6:5.0f} us/request ({best * 1e6 / args.records_per_request:.2f}"
                  f" us/record), median {median * 1e6:5.0f} us/request; rounds "
                  + ", ".join(f"{v * 1e6:.0f}" for v in per_request), flush=True)


if __name__ == "__main__":
    start = time.monotonic()
    main()
    print(f"({time.monotonic() - start:.0f} s)")
