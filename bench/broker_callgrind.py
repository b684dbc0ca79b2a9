"""Instructions mini_broker's threads spend per produce request, counted by callgrind (repeatable on a busy box).

    .venv/bin/python bench/broker_callgrind.py                      # 200 requests, acks=1, 1 partition
    .venv/bin/python bench/broker_callgrind.py --acks -1 --keep /tmp/cg   # keep the dumps for callgrind_annotate

A MiniBroker runs under ``valgrind --tool=callgrind --separate-threads=yes``; bench/broker_produce.py's client (a
child process, not under valgrind) sends its pre-built Produce v11 requests (148 x 100 B, ``--in-flight``
unanswered). After a warm-up round the counts are zeroed (``callgrind_control -z``), one round of ``--requests``
is sent and the counts are dumped (``callgrind_control -d``): each thread's instructions of that round divided by
the requests. The network thread (the Processor) is the one that ran the most (it handles Produce inline).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def child(acks: int, partitions: int, requests: int, in_flight: int, per_request: int) -> None:
    """Run under valgrind: the broker, and the client process sending a warm-up round then the measured one."""
    import threading

    from broker_produce import CLIENT  # bench/broker_produce.py's client

    from mini_broker.broker import MiniBroker

    with MiniBroker() as broker:
        assert broker.replica_manager is not None
        broker.replica_manager.create_topic("t", partitions, {})
        args = [broker.port, acks, partitions, requests, in_flight, 2, per_request]
        client = subprocess.Popen([sys.executable, "-c", CLIENT, *map(str, args)], cwd=ROOT, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        assert client.stdin is not None and client.stdout is not None
        try:
            for measured in (False, True):
                if client.stdout.readline().strip() != "ready":
                    raise RuntimeError("the client process failed before its round")
                if measured:
                    print("zero " + " ".join(t.name for t in threading.enumerate()), flush=True)
                    sys.stdin.readline()  # counts zeroed
                client.stdin.write("go\n")
                client.stdin.flush()
                if client.stdout.readline().strip() != "done":
                    raise RuntimeError("the client process failed during its round")
            print("dump", flush=True)
            sys.stdin.readline()  # counts dumped
        finally:
            client.kill()
            client.wait()


def _control(flag: str, pid: int) -> None:
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True, timeout=600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--acks", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--in-flight", type=int, default=5)
    ap.add_argument("--records-per-request", type=int, default=148)
    ap.add_argument("--keep", metavar="DIR", help="write the callgrind dumps here (for callgrind_annotate)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.acks, args.partitions, args.requests, args.in_flight, args.records_per_request)
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return
    out_dir = args.keep or tempfile.mkdtemp()
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "cg.out*")):
        os.remove(old)
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out_dir}/cg.out",
           sys.executable, os.path.abspath(__file__), "--child", "--acks", str(args.acks), "--partitions",
           str(args.partitions), "--requests", str(args.requests), "--in-flight", str(args.in_flight),
           "--records-per-request", str(args.records_per_request)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    assert proc.stdin is not None and proc.stdout is not None
    threads: list[str] = []
    try:
        for line in proc.stdout:
            word, _, rest = line.strip().partition(" ")
            if word == "zero":
                threads = rest.split()
                _control("-z", proc.pid)
            elif word == "dump":
                _control("-d", proc.pid)
                time.sleep(1)
            else:
                continue
            proc.stdin.write("\n")
            proc.stdin.flush()
            if word == "dump":
                break
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    from producer_io_callgrind import thread_instructions  # bench/producer_io_callgrind.py

    counts = thread_instructions(out_dir, "cg.out.1-*")  # the dump after the measured round
    if not counts:
        raise RuntimeError(f"no callgrind dump in {out_dir}")
    print(f"{args.records_per_request} x 100 B, {args.partitions} partition(s), acks={args.acks}, {args.requests}"
          f" requests measured; threads at zeroing: {', '.join(threads)}")
    network = max(counts, key=lambda t: counts[t])
    for tid in sorted(counts):
        label = "  <- network thread" if tid == network else ""
        print(f"  thread {tid}: {counts[tid] / args.requests:>12,.0f} instructions per request{label}")
    print(f"process: {sum(counts.values()) / args.requests:,.0f} instructions per request")
    if args.keep:
        print(f"dumps in {out_dir} (e.g. callgrind_annotate --inclusive=yes {out_dir}/cg.out.1-{network:02d})")
    else:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
