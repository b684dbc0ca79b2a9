"""Instructions the producer's I/O thread spends per produce request, counted by callgrind (repeatable on a busy box).

    .venv/bin/python bench/producer_io_callgrind.py                 # 200 requests, then 400, acks=1
    .venv/bin/python bench/producer_io_callgrind.py --requests 100 --acks all
    PYKAFKA_NO_NATIVE=1 .venv/bin/python bench/producer_io_callgrind.py   # the pure-Python reference

A mini_broker runs in its own process (not under valgrind). The client runs under ``valgrind --tool=callgrind
--separate-threads=yes`` twice: sending N and then 2N full batches (100-byte values, Java's default 16 KiB
batch.size, one partition, so one batch of ~148 records per request; linger.ms is long, so only full batches go
until the final flush). The I/O thread's instructions of the 2N run minus those of the N run, divided by the
difference in requests sent, is its cost per produce request without the start-up (connection, metadata).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

VALUE_SIZE = 100
RECORDS_PER_BATCH = 148  # 100-byte values in a 16 KiB batch


def child(bootstrap: str, requests: int, acks: str) -> None:
    """Run under valgrind: send ``requests`` full batches and flush; print what was sent."""
    import threading

    from pykafka_client import KafkaProducer

    value = b"x" * VALUE_SIZE
    topic = "io-callgrind"
    p = KafkaProducer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 60000})
    p.send(topic, value)
    p.flush()  # metadata + connection
    sender = p.sender
    iterations = [0]
    run_once = sender.run_once

    def counted_run_once() -> None:  # the I/O thread's loop iterations (idle polls vary with the broker's pace)
        iterations[0] += 1
        run_once()

    sender.run_once = counted_run_once  # type: ignore[method-assign]
    start = p.sender.metrics.requests_sent
    send = p.send
    for _ in range(requests * RECORDS_PER_BATCH):
        send(topic, value)
    p.flush()
    sent = p.sender.metrics.requests_sent - start
    threads = [t.name for t in threading.enumerate()]
    p.close()
    print(json.dumps({"requests": sent, "iterations": iterations[0], "threads": threads}))


def thread_instructions(out_dir: str, pattern: str = "cg.out-*") -> dict[int, int]:
    """Instructions per callgrind thread number (1 is the main thread) of the run in ``out_dir`` (its files named
    ``pattern``; ``cg.out.1-*`` for the first dump of a callgrind_control -d)."""
    counts: dict[int, int] = {}
    for path in glob.glob(os.path.join(out_dir, pattern)):
        tid = int(path.rsplit("-", 1)[1])
        with open(path) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    counts[tid] = int(line.split()[1])
                    break
    return counts


def run(bootstrap: str, requests: int, acks: str) -> tuple[int, int, dict[int, int]]:
    with tempfile.TemporaryDirectory() as d:
        cmd = [
            "valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={d}/cg.out",
            sys.executable, os.path.abspath(__file__), "--child", bootstrap, "--requests", str(requests), "--acks", acks,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT)
        if out.returncode != 0:
            raise RuntimeError(f"child failed: {out.stderr[-2000:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        return int(res["requests"]), int(res["iterations"]), thread_instructions(d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200, help="N: full batches (requests) in the first run")
    ap.add_argument("--acks", default="1")
    ap.add_argument("--child", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.requests, args.acks)
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return
    from producer import start_broker  # bench/producer.py

    with tempfile.TemporaryDirectory() as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            r1, i1, c1 = run(bootstrap, args.requests, args.acks)
            r2, i2, c2 = run(bootstrap, 2 * args.requests, args.acks)
        finally:
            broker.kill()
            broker.wait()
    native = "pure Python" if os.environ.get("PYKAFKA_NO_NATIVE") == "1" else "C kernel"
    print(f"acks={args.acks}, {native}: runs of {r1} and {r2} produce requests")
    for tid in sorted(set(c1) | set(c2)):
        print(f"  thread {tid}: {c1.get(tid, 0):>14,} -> {c2.get(tid, 0):>14,} instructions")
    # the I/O thread: the first thread the producer starts (thread 2 of callgrind's numbering)
    io = c2.get(2, 0) - c1.get(2, 0)
    print(f"I/O thread: {io / max(r2 - r1, 1):,.0f} instructions per produce request"
          f" ({(i2 - i1) / max(r2 - r1, 1):.2f} loop iterations per request)")


if __name__ == "__main__":
    main()
