"""Transactional produce: what transactions cost over idempotent produce, pykafka_client and confluent-kafka.

    .venv/bin/python bench/transactions.py                     # 20k x 100-byte values (2k for 1 record/txn)
    .venv/bin/python bench/transactions.py --records 100000    # steadier
    .venv/bin/python bench/transactions.py --sizes 100,10000   # only some transaction sizes
    .venv/bin/python bench/transactions.py --against HOST:PORT # a running broker

A mini_broker runs in its own process; each client x mode runs in its own process (its own GIL). Modes:
``idempotent`` (send everything, flush) and ``txn-K`` (begin, K sends, commit_transaction, repeated), 1-partition
topic, linger.ms=5, values pre-built; time is from the first send of the timed part to the end of the last
commit (init_transactions and a warm-up transaction are outside it). Output: records/s, the ratio to the same
client's idempotent rate (aim: >= 0.90 from 100 records per transaction up), and commit_transaction latency
p50/p99 in ms (aim: p99 < 20 ms on loopback for transactions that fit in a batch or two).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from producer import create_topic, start_broker  # noqa: E402  (bench/producer.py, next to this file)

CLIENTS = ["pykafka_client", "confluent-kafka"]
SIZES = [1, 100, 10_000]


def run_ours(bootstrap: str, topic: str, n: int, per_txn: int, value: bytes) -> tuple[float, list[float]]:
    from pykafka_client import KafkaProducer

    config: dict[str, object] = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if per_txn:
        config["transactional.id"] = f"bench-{topic}"
    p = KafkaProducer(config)
    try:
        send = p.send
        if not per_txn:
            send(topic, value, partition=0).result(30)  # metadata + connection outside the timing
            start = time.perf_counter()
            for _ in range(n):
                send(topic, value, partition=0)
            p.flush()
            return time.perf_counter() - start, []
        p.init_transactions(30)
        p.begin_transaction()
        send(topic, value, partition=0)
        p.commit_transaction(30)
        commits: list[float] = []
        start = time.perf_counter()
        for _ in range(n // per_txn):
            p.begin_transaction()
            for _ in range(per_txn):
                send(topic, value, partition=0)
            t0 = time.perf_counter()
            p.commit_transaction(30)
            commits.append(time.perf_counter() - t0)
        return time.perf_counter() - start, commits
    finally:
        p.close(10)


def run_confluent(bootstrap: str, topic: str, n: int, per_txn: int, value: bytes) -> tuple[float, list[float]]:
    import confluent_kafka

    config: dict[str, object] = {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    if per_txn:
        config["transactional.id"] = f"bench-{topic}"
    p = confluent_kafka.Producer(config)
    produce, poll = p.produce, p.poll

    def send_many(count: int) -> None:
        for i in range(count):
            while True:
                try:
                    produce(topic, value, partition=0)
                    break
                except BufferError:
                    poll(0.01)
            if i % 1000 == 0:
                poll(0)

    if not per_txn:
        produce(topic, value, partition=0)
        p.flush(30)
        start = time.perf_counter()
        send_many(n)
        p.flush()
        return time.perf_counter() - start, []
    p.init_transactions(30)
    p.begin_transaction()
    produce(topic, value, partition=0)
    p.commit_transaction(30)
    commits: list[float] = []
    start = time.perf_counter()
    for _ in range(n // per_txn):
        p.begin_transaction()
        send_many(per_txn)
        t0 = time.perf_counter()
        p.commit_transaction(30)
        commits.append(time.perf_counter() - t0)
    return time.perf_counter() - start, commits


RUNNERS = {"pykafka_client": run_ours, "confluent-kafka": run_confluent}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def child(args: argparse.Namespace) -> None:
    elapsed, commits = RUNNERS[args.client](args.bootstrap, args.topic, args.records, args.per_txn,
                                            b"x" * args.value_size)
    out: dict[str, Any] = {"elapsed": elapsed, "records": args.records // args.per_txn * args.per_txn
                           if args.per_txn else args.records}
    if commits:
        out["p50_ms"] = percentile(commits, 0.50) * 1e3
        out["p99_ms"] = percentile(commits, 0.99) * 1e3
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--records-txn1", type=int, default=2_000, help="records for 1 record per transaction")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="records per transaction")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--against", metavar="HOST:PORT", help="a running broker instead of a fresh mini_broker process")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--per-txn", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-transactions-") as data_dir:
        broker, bootstrap = (None, args.against) if args.against else start_broker(data_dir)
        try:
            where = args.against or "mini_broker in its own process"
            print(f"{args.records} records x {args.value_size} B ({args.records_txn1} at 1 record/txn), 1 partition, "
                  f"linger.ms=5, {where}")
            print(f"{'mode':<14}{'client':<17}{'rec/s':>10}{'vs idempotent':>15}{'commit p50 ms':>15}{'p99 ms':>9}")
            for client in args.clients.split(","):
                base: float | None = None
                for per_txn in [0, *sizes]:
                    n = args.records_txn1 if per_txn == 1 else args.records
                    topic = f"bench-txn-{per_txn}-{client}-{time.monotonic_ns()}"
                    create_topic(bootstrap, topic, 1)
                    cmd = [sys.executable, __file__, "--child", "--client", client, "--bootstrap", bootstrap,
                           "--topic", topic, "--per-txn", str(per_txn), "--records", str(n),
                           "--value-size", str(args.value_size)]
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
                    mode = f"txn-{per_txn}" if per_txn else "idempotent"
                    if out.returncode != 0:
                        print(f"{mode:<14}{client:<17}failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
                        continue
                    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
                    rate = res["records"] / res["elapsed"]
                    if not per_txn:
                        base = rate
                    ratio = f"{rate / base:.2f}x" if base else "-"
                    p50 = f"{res['p50_ms']:.1f}" if "p50_ms" in res else "-"
                    p99 = f"{res['p99_ms']:.1f}" if "p99_ms" in res else "-"
                    print(f"{mode:<14}{client:<17}{rate:>10.0f}{ratio:>15}{p50:>15}{p99:>9}", flush=True)
        finally:
            if broker is not None:
                broker.terminate()
                broker.wait(30)


if __name__ == "__main__":
    main()
