"""Instructions per produce request of each mini_broker thread, counted by callgrind (repeatable on a busy box).

    .venv/bin/python bench/broker_callgrind.py                          # 1 partition, acks=1
    .venv/bin/python bench/broker_callgrind.py --acks -1 --partitions 6 --keep /tmp/cg

A MiniBroker runs under ``valgrind --tool=callgrind --separate-threads=yes``; bench/broker_produce.py's client
(another process, not under valgrind) sends a warm-up round of ``--requests`` Produce requests (148 x 100 B records
from an idempotent producer, 5 in flight), then the counts are zeroed (``callgrind_control -z``), a measured round
of as many requests is sent and the counts are dumped (``callgrind_control -d``). Each thread's instructions of the
measured round divided by the requests. ``--keep DIR`` keeps the dump for ``callgrind_annotate --inclusive=yes``.
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
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def broker_child(partitions: int) -> None:
    """Run under valgrind: a broker with topic ``t``; prints its port and thread names, then waits for stdin's end."""
    from mini_broker.broker import MiniBroker

    with MiniBroker() as broker:
        assert broker.replica_manager is not None
        broker.replica_manager.create_topic("t", partitions, {})
        print(json.dumps({"port": broker.port, "threads": [t.name for t in threading.enumerate()]}), flush=True)
        sys.stdin.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--acks", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--requests", type=int, default=200, help="per round (a warm-up round, then the measured one)")
    ap.add_argument("--in-flight", type=int, default=5)
    ap.add_argument("--records-per-request", type=int, default=148)
    ap.add_argument("--keep", metavar="DIR", help="keep the callgrind dump here")
    ap.add_argument("--broker-child", type=int, metavar="PARTITIONS", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.broker_child is not None:
        broker_child(args.broker_child)
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return
    from broker_produce import CLIENT  # bench/broker_produce.py
    from producer_io_callgrind import thread_instructions

    out_dir = args.keep or tempfile.mkdtemp()
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "cg.out*")):
        os.remove(old)
    broker = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out_dir}/cg.out",
         sys.executable, os.path.abspath(__file__), "--broker-child", str(args.partitions)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    assert broker.stdin is not None and broker.stdout is not None
    try:
        info = json.loads(broker.stdout.readline())
        client_args = [info["port"], args.acks, args.partitions, args.requests, args.in_flight, 2,
                       args.records_per_request]
        client = subprocess.Popen([sys.executable, "-c", CLIENT, *map(str, client_args)], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "PYTHONPATH": ROOT})
        assert client.stdin is not None and client.stdout is not None
        try:
            for measured in (False, True):
                if client.stdout.readline().strip() != "ready":
                    raise RuntimeError("the client process failed before its round")
                if measured:
                    subprocess.run(["callgrind_control", "-z", str(broker.pid)], check=True, capture_output=True)
                client.stdin.write("go\n")
                client.stdin.flush()
                if client.stdout.readline().strip() != "done":
                    raise RuntimeError("the client process failed during its round")
            time.sleep(0.5)  # the last response's send completes on the network thread
            subprocess.run(["callgrind_control", "-d", str(broker.pid)], check=True, capture_output=True)
        finally:
            client.kill()
            client.wait()
    finally:
        broker.stdin.close()
        try:
            broker.wait(120)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
    counts = thread_instructions(out_dir, "cg.out.*-*")  # the dump after the zeroing
    print(f"{args.partitions}p acks={args.acks}: {args.requests} measured requests of {args.records_per_request}"
          f" records; threads at start: {', '.join(info['threads'])}")
    for tid in sorted(counts):
        print(f"  thread {tid}: {counts[tid] / args.requests:>12,.0f} instructions per request")
    if not args.keep:
        shutil.rmtree(out_dir)


if __name__ == "__main__":
    main()
