"""Instructions the caller's thread spends per ``KafkaProducer.send()``, counted by callgrind (repeatable on a busy box).

    .venv/bin/python bench/producer_send_callgrind.py                      # default config, 16 KiB batches, N=20k
    .venv/bin/python bench/producer_send_callgrind.py --config micro       # bench/producer.py --micro's config
    .venv/bin/python bench/producer_send_callgrind.py --batch-size 100 --records 1500   # every send opens a batch
    .venv/bin/python bench/producer_send_callgrind.py --functions 25       # also the top functions per record
    .venv/bin/python bench/producer_send_callgrind.py --send-batch 10000 --records 100000   # send_batch, 10k a call
    .venv/bin/python bench/producer_send_callgrind.py --send-batch 10000 --arrow --records 100000   # a pyarrow column

No broker: the Sender thread is stopped and the metadata injected (as ``bench/producer.py --micro``); the loop
sends 100-byte values with no key and no callback and keeps nothing. The main thread runs under ``valgrind
--tool=callgrind`` twice, sending N and then 2N records (PYTHONHASHSEED=0); the difference divided by N is the
cost of one ``send()`` (new batches and the GC amortised) without the start-up. ``--functions K`` prints each
function's inclusive instructions per record from the same two runs (``callgrind_annotate --inclusive=yes``).
``--send-batch K`` sends the records with ``KafkaProducer.send_batch``, K a call (N a multiple of K): the values a
list of K distinct 100-byte bytes objects, no keys, built once before the loop (``--arrow``: a pyarrow binary array
of them); the count is then the caller's cost of one record of a ``send_batch`` call.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

VALUE_SIZE = 100


def child(records: int, config: str, batch_size: int, send_batch: int, arrow: bool) -> None:
    """Run under valgrind: ``records`` sends into a producer whose Sender never runs."""
    from pykafka_client import KafkaProducer
    from pykafka_client.producer import sender as sender_module
    from tests.doubles.responses import metadata_response, nodes

    sender_module.Sender.run = lambda self: None  # type: ignore[method-assign]
    conf: dict[str, object] = {"bootstrap.servers": "127.0.0.1:9", "buffer.memory": 1 << 30, "batch.size": batch_size}
    if config == "micro":
        conf.update({"acks": "1", "linger.ms": 5, "enable.idempotence": False})
    p = KafkaProducer(conf)
    topic = "send-callgrind"
    now = p._time.hi_res_clock_ms()
    p.metadata.add(topic, now)
    p.metadata.update(0, metadata_response(nodes(1), {topic: 1}, leaders={(topic, 0): 0}), False, now)
    value = b"x" * VALUE_SIZE
    if send_batch:
        values: object = [bytes([i % 256]) * VALUE_SIZE for i in range(send_batch)]
        if arrow:
            import pyarrow as pa

            values = pa.array(values, pa.binary())
        many = p.send_batch
        for _ in range(records // send_batch):
            many(topic, values)
    else:
        send = p.send
        for _ in range(records):
            send(topic, value)
    batches = sum(len(q.batches) for q in p.accumulator._topics[topic].queues.values())
    print(json.dumps({"records": records, "batches": batches}))
    os._exit(0)  # no close: its work is not send()'s


def total(out_file: str) -> int:
    with open(out_file) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {out_file}")


def inclusive(out_file: str) -> dict[str, int]:
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                         capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if m and ":" in m.group(2):
            counts[m.group(2).strip()] = int(m.group(1).replace(",", ""))
    return counts


def run(records: int, config: str, batch_size: int, send_batch: int, arrow: bool, d: str) -> tuple[int, str]:
    out_file = os.path.join(d, f"cg.out.{records}")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", sys.executable,
           os.path.abspath(__file__), "--child", "--records", str(records), "--config", config,
           "--batch-size", str(batch_size), "--send-batch", str(send_batch)] + (["--arrow"] if arrow else [])
    env = dict(os.environ, PYTHONHASHSEED="0")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"child failed: {res.stderr[-2000:]}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    return total(glob.glob(out_file + "*")[0]), json.dumps(info)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20000, help="N: sends in the first run (2N in the second)")
    ap.add_argument("--config", choices=("default", "micro"), default="default",
                    help="default: idempotent, acks=all; micro: acks=1, not idempotent, linger 5")
    ap.add_argument("--batch-size", type=int, default=16384)
    ap.add_argument("--send-batch", type=int, default=0, metavar="K",
                    help="send through send_batch, K records a call (0: send(), one a call)")
    ap.add_argument("--arrow", action="store_true", help="with --send-batch: the values as a pyarrow binary array")
    ap.add_argument("--functions", type=int, default=0, metavar="K", help="print the top K functions per record")
    ap.add_argument("--keep", metavar="DIR", help="keep the callgrind output files in DIR")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.records, args.config, args.batch_size, args.send_batch, args.arrow)
        return
    if args.send_batch and args.records % args.send_batch:
        ap.error("--records must be a multiple of --send-batch")
    if args.arrow and not args.send_batch:
        ap.error("--arrow needs --send-batch")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return
    d = args.keep or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    try:
        n = args.records
        t1, info1 = run(n, args.config, args.batch_size, args.send_batch, args.arrow, d)
        t2, info2 = run(2 * n, args.config, args.batch_size, args.send_batch, args.arrow, d)
        native = "pure Python" if os.environ.get("PYKAFKA_NO_NATIVE") == "1" else "C kernel"
        how = "send()" if not args.send_batch else f"record of send_batch ({args.send_batch} a call{', arrow' if args.arrow else ''})"
        print(f"config={args.config}, batch.size={args.batch_size}, {native}: {info1} / {info2}")
        print(f"instructions per {how}: {(t2 - t1) / n:,.0f}  ({t1:,} -> {t2:,})")
        if args.functions:
            c1 = inclusive(os.path.join(d, f"cg.out.{n}"))
            c2 = inclusive(os.path.join(d, f"cg.out.{2 * n}"))
            rows = sorted(((c2.get(k, 0) - c1.get(k, 0)) / n, k) for k in set(c1) | set(c2))
            for per, name in sorted(rows, reverse=True)[: args.functions]:
                print(f"  {per:>10,.0f}  {name}")
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
