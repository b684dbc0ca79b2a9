"""The README demo: our producer and a consumer group against a local mini_broker.

Starts mini_broker in its own process (``python -m mini_broker`` on a free loopback port, data in a temp
dir, stopped at the end; see examples/local_broker.py), so the rates printed are the client's and not
shared with the broker's threads under one GIL. Creates a topic with AdminClient,
produces keyed records with KafkaProducer (idempotent, acks=all: the defaults), then consumes them with
two KafkaConsumers in one group and checks that every record arrived exactly once and in order per
partition. Run it with ``./dev demo`` (``--records N`` and ``--partitions N`` change the workload).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import mini_broker_process
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import NewTopic

TOPIC = "demo-events"


def _progress(label: str, done: int, total: int, started: float) -> None:
    elapsed = max(time.monotonic() - started, 1e-9)
    print(f"  {label}: {done:>8,}/{total:,} records  {done / elapsed:>10,.0f} rec/s", flush=True)


def produce(bootstrap: str, records: int, partitions: int) -> float:
    started = time.monotonic()
    with KafkaProducer({"bootstrap.servers": bootstrap, "client.id": "demo-producer"}) as producer:
        futures = []
        for i in range(records):
            key = f"user-{i % 97}".encode()
            futures.append(producer.send(TOPIC, value=f"event {i}".encode(), key=key, headers=[("seq", str(i).encode())]))
            if (i + 1) % max(1, records // 4) == 0:
                _progress("produced", i + 1, records, started)
        producer.flush(60.0)
        last = futures[-1].result(timeout=60.0)
        failed = sum(1 for f in futures if f.exception() is not None)
    if failed:
        raise SystemExit(f"{failed} sends failed; see the errors above")
    print(f"  last record acknowledged at {last.topic}[{last.partition}]@{last.offset}")
    return time.monotonic() - started


def consume(bootstrap: str, records: int, members: int) -> tuple[float, dict[int, list[int]]]:
    """Run ``members`` consumers in one group until all records are seen; returns elapsed and sequences."""
    seen: dict[int, list[int]] = defaultdict(list)
    lock = threading.Lock()
    done = threading.Event()
    started = time.monotonic()
    errors: list[BaseException] = []

    def member(index: int) -> None:
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": "demo-group",
            "client.id": f"demo-consumer-{index}",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
        }
        try:
            with KafkaConsumer(config) as consumer:
                consumer.subscribe([TOPIC])
                while not done.is_set():
                    batch = consumer.poll(0.5)
                    with lock:
                        for record in batch:
                            seen[record.partition].append(int(record.value.decode().split()[1]))
                        total = sum(len(v) for v in seen.values())
                        if total >= records:
                            done.set()
                consumer.commit_sync()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            done.set()

    threads = [threading.Thread(target=member, args=(i,), name=f"demo-consumer-{i}") for i in range(members)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while not done.wait(2.0):
        with lock:
            total = sum(len(v) for v in seen.values())
        _progress("consumed", total, records, started)
        if time.monotonic() > deadline:
            done.set()
    for t in threads:
        t.join(30)
    if errors:
        raise SystemExit(f"a consumer failed: {errors[0]!r}")
    return time.monotonic() - started, seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--consumers", type=int, default=2)
    args = parser.parse_args(argv)

    with mini_broker_process({"group.initial.rebalance.delay.ms": 0}) as bootstrap:
        print(f"mini_broker listening on {bootstrap} (a separate process)")
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(TOPIC, num_partitions=args.partitions, replication_factor=1)], timeout=10.0)
            print(f"created topic {TOPIC} with {args.partitions} partitions")

        print(f"producing {args.records:,} records (idempotent, acks=all) ...")
        produce_s = produce(bootstrap, args.records, args.partitions)

        print(f"consuming with {args.consumers} consumers in group demo-group ...")
        consume_s, seen = consume(bootstrap, args.records, args.consumers)

    all_seqs = sorted(s for seqs in seen.values() for s in seqs)
    in_order = all(seqs == sorted(seqs) for seqs in seen.values())
    exactly_once = all_seqs == list(range(args.records))
    print()
    print(f"produce: {args.records / produce_s:>10,.0f} rec/s   consume: {args.records / consume_s:>10,.0f} rec/s "
          f"(consume time includes the group join)")
    print(f"every record exactly once: {exactly_once};  in order within each partition: {in_order}")
    return 0 if (exactly_once and in_order) else 1


if __name__ == "__main__":
    sys.exit(main())
