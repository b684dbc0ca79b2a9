"""Consumer throughput: pykafka_client vs kafka-python, aiokafka and confluent-kafka in one run.

    .venv/bin/python bench/consumer.py                  # 200k x 100-byte values, 4 configs x 4 clients
    .venv/bin/python bench/consumer.py --records 20000  # quicker
    .venv/bin/python bench/consumer.py --profile        # cProfile our client's hot path (top 25)
    .venv/bin/python bench/consumer.py --profile --compression lz4

A mini_broker runs in its own process; topics are filled once per config with confluent-kafka's producer
(batch.size 64 KiB, linger 20 ms). Each client consumes every record from the beginning in its own process
(assign mode, no group), touching each value. Configs: 1 and 6 partitions x uncompressed and lz4. Time is
from the consumer's construction to the last record (connection and first fetch included). Output:
records/s per client and config, ratio to pykafka_client, peak RSS in MiB.

Rebalance latency (our client only, `--rebalance-only` to skip the throughput table): a stable group of 3 of
our consumers on 8 partitions, a producer writing to every partition; a 4th member joins. Latency is the time
from the 4th member's subscribe() until every member has received a record after its last rebalance callback
in the new generation (eager range: everyone revokes and rejoins; cooperative-sticky: two rounds, kept
partitions keep flowing). Each run is bounded (20 s).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: "ours-python" is pykafka_client with PYKAFKA_NO_NATIVE=1: the pure-Python record code, not the compiled kernel.
CLIENTS = ["pykafka_client", "ours-python", "kafka-python", "aiokafka", "confluent-kafka"]
FALLBACK_ENV = {**os.environ, "PYKAFKA_NO_NATIVE": "1"}
CLIENT_MODULES = {
    "pykafka_client": "pykafka_client.consumer.kafka_consumer",
    "ours-python": "pykafka_client.consumer.kafka_consumer",
    "kafka-python": "kafka",
    "aiokafka": "aiokafka",
    "confluent-kafka": "confluent_kafka",
}


def run_ours(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    from pykafka_client import KafkaConsumer, TopicPartition

    start = time.perf_counter()
    c: KafkaConsumer[Any, Any] = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    seen = 0
    total = 0
    while seen < n:
        for r in c.poll(1.0):
            total += len(r.value)
            seen += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def run_kafka_python(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    import kafka

    start = time.perf_counter()
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    c.assign([kafka.TopicPartition(topic, p) for p in range(partitions)])
    seen = 0
    total = 0
    while seen < n:
        for recs in c.poll(timeout_ms=1000).values():
            for r in recs:
                total += len(r.value)
                seen += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def run_aiokafka(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    import aiokafka
    from aiokafka.structs import TopicPartition

    async def main() -> float:
        start = time.perf_counter()
        c = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
        )
        await c.start()
        try:
            c.assign([TopicPartition(topic, p) for p in range(partitions)])
            seen = 0
            total = 0
            while seen < n:
                batches = await c.getmany(timeout_ms=1000)
                for recs in batches.values():
                    for r in recs:
                        total += len(r.value)
                        seen += 1
            return time.perf_counter() - start
        finally:
            await c.stop()

    return asyncio.run(main())


def run_confluent(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    import confluent_kafka

    start = time.perf_counter()
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(partitions)])
    seen = 0
    total = 0
    while seen < n:
        for m in c.consume(1000, 1.0):
            if m.error() is None:
                total += len(m.value() or b"")
                seen += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


RUNNERS = {
    "pykafka_client": run_ours,
    "ours-python": run_ours,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "confluent-kafka": run_confluent,
}


REBALANCE_STRATEGIES = ["range", "cooperative-sticky"]
REBALANCE_PARTITIONS = 8


def run_rebalance(bootstrap: str, strategy: str, heartbeat_ms: int, bound_s: float = 20.0) -> float:
    """Seconds from a 4th member's subscribe() until all 4 members consume again (see the module doc)."""
    import threading
    import uuid

    from pykafka_client import AdminClient, ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
    from pykafka_client.admin.types import NewTopic

    topic = f"rebalance-{strategy}-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, REBALANCE_PARTITIONS, 1)], timeout=10)
    group = f"bench-{uuid.uuid4().hex[:8]}"
    lock = threading.Lock()
    stop = threading.Event()
    go = [threading.Event() for _ in range(4)]
    owned: list[set[TopicPartition]] = [set() for _ in range(4)]
    last_change = [0.0] * 4  # time of the member's last rebalance callback
    first_after: list[float | None] = [None] * 4  # first record received after it
    errors: list[BaseException] = []
    sent = [0]

    class Listener(ConsumerRebalanceListener):
        def __init__(self, i: int) -> None:
            self.i = i

        def _changed(self) -> None:
            last_change[self.i] = time.perf_counter()
            first_after[self.i] = None

        def on_partitions_revoked(self, revoked: Any) -> None:
            with lock:
                owned[self.i] -= set(revoked)
                self._changed()

        def on_partitions_assigned(self, assigned: Any) -> None:
            with lock:
                owned[self.i] |= set(assigned)
                self._changed()

        def on_partitions_lost(self, lost: Any) -> None:
            self.on_partitions_revoked(lost)

    def member(i: int) -> None:
        c: KafkaConsumer[Any, Any] = KafkaConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "partition.assignment.strategy": strategy,
                "heartbeat.interval.ms": heartbeat_ms,
                "auto.offset.reset": "latest",
            }
        )
        try:
            go[i].wait(bound_s)
            c.subscribe([topic], Listener(i))
            while not stop.is_set():
                if c.poll(0.05).count():
                    now = time.perf_counter()
                    with lock:
                        if first_after[i] is None:
                            first_after[i] = now
        except BaseException as e:  # reported by the caller
            errors.append(e)
        finally:
            c.close(5)

    def produce() -> None:
        p = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        try:
            i = 0
            while not stop.is_set():
                p.send(topic, value=b"x", partition=i % REBALANCE_PARTITIONS)
                i += 1
                sent[0] = i
                if i % REBALANCE_PARTITIONS == 0:
                    time.sleep(0.002)
        except BaseException as e:
            errors.append(e)
        finally:
            p.close(5)

    def wait_until(cond: Any) -> bool:
        deadline = time.perf_counter() + bound_s
        while time.perf_counter() < deadline and not errors:
            with lock:
                if cond():
                    return True
            time.sleep(0.002)
        return False

    def all_consuming(members: int, since: float) -> bool:
        sizes = sorted(len(o) for o in owned[:members])
        fair = REBALANCE_PARTITIONS // members
        return (
            sum(sizes) == REBALANCE_PARTITIONS
            and sizes[0] >= fair
            and sizes[-1] <= fair + 1
            and all(last_change[i] >= since and first_after[i] is not None for i in range(members))
        )

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(4)]
    threads.append(threading.Thread(target=produce, daemon=True))
    for t in threads:
        t.start()
    try:
        for i in range(3):
            go[i].set()
        if not wait_until(lambda: all_consuming(3, 0.0)):
            raise RuntimeError(f"the 3-member group did not settle: {errors or owned}")
        t0 = time.perf_counter()
        go[3].set()
        if not wait_until(lambda: all_consuming(4, t0)):
            raise RuntimeError(
                f"the 4-member group did not consume again within {bound_s} s: sent {sent[0]}, errors {errors}, "
                f"owned {[len(o) for o in owned]}, callbacks at {[c - t0 for c in last_change]}, first records "
                f"at {[f - t0 if f else None for f in first_after]}"
            )
        with lock:
            return max(f for f in first_after if f is not None) - t0
    finally:
        stop.set()
        for t in threads:
            t.join(15)


def child(args: argparse.Namespace) -> None:
    if args.rebalance_strategy:
        latency = run_rebalance(args.bootstrap, args.rebalance_strategy, args.heartbeat_ms)
        print(json.dumps({"latency": latency}))
        return
    runner = RUNNERS[args.client]
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        elapsed = runner(args.bootstrap, args.topic, args.partitions, args.records)
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    else:
        # the client's imports are not per-record work: done before the CPU clock starts
        importlib.import_module(CLIENT_MODULES[args.client])
        cpu0 = time.process_time()
        elapsed = runner(args.bootstrap, args.topic, args.partitions, args.records)
    cpu = time.process_time() - cpu0 if not args.profile else 0.0
    print(json.dumps({"elapsed": elapsed, "rss_mib": peak_rss_mib(), "cpu_s": cpu}))


def peak_rss_mib() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: on Linux ru_maxrss survives exec, so a child
    started from a big parent would report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def start_broker(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_broker", "--listeners", "PLAINTEXT://127.0.0.1:0", "--data-dir", data_dir,
         "--log-level", "WARNING", "--override", "num.partitions=1",
         "--override", "group.initial.rebalance.delay.ms=0"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return proc, line.strip().rsplit("//", 1)[1]


def fill_topic(bootstrap: str, name: str, partitions: int, n: int, value_size: int, compression: str) -> None:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    p = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 20, "batch.size": 65536}
    )
    value = b"x" * value_size
    for i in range(n):
        while True:
            try:
                p.produce(name, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)


def rebalance_table(bootstrap: str, heartbeat_ms: int) -> None:
    print(
        f"\nrebalance latency: 3 -> 4 members of ours, {REBALANCE_PARTITIONS} partitions, "
        f"heartbeat.interval.ms={heartbeat_ms}, until every member consumes again"
    )
    print(f"{'strategy':<20}{'latency ms':>12}")
    for strategy in REBALANCE_STRATEGIES:
        cmd = [sys.executable, __file__, "--child", "--rebalance-strategy", strategy, "--bootstrap", bootstrap,
               "--heartbeat-ms", str(heartbeat_ms)]  # fmt: skip
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
        except subprocess.TimeoutExpired:
            print(f"{strategy:<20}{'timeout':>12}")
            continue
        if out.returncode != 0:
            print(f"{strategy:<20}{'failed':>12}  {out.stderr.strip().splitlines()[-1:]}")
            continue
        res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{strategy:<20}{res['latency'] * 1000:>12.0f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--profile", action="store_true", help="profile pykafka_client only (1 partition)")
    ap.add_argument("--compression", default="none", help="compression of the profiled config (none, lz4, ...)")
    ap.add_argument("--rebalance-only", action="store_true", help="only the rebalance latency table")
    ap.add_argument("--heartbeat-ms", type=int, default=3000, help="heartbeat.interval.ms of the rebalance runs")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rebalance-strategy", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--partitions", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-consumer-") as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            if args.rebalance_only:
                rebalance_table(bootstrap, args.heartbeat_ms)
                return
            configs = [(1, args.compression)] if args.profile else [(1, "none"), (1, "lz4"), (6, "none"), (6, "lz4")]
            clients = ["pykafka_client"] if args.profile else args.clients.split(",")
            print(f"{args.records} records x {args.value_size} B, mini_broker in its own process")
            print(f"{'config':<14}{'client':<17}{'rec/s':>10}{'MB/s':>8}{'vs ours':>9}{'RSS MiB':>9}"
                  "  CPU us/record (process, all threads; pykafka_client and ours-python: record kernel on/off)")
            for partitions, compression in configs:
                topic = f"bench-{partitions}-{compression}-{time.monotonic_ns()}"
                fill_topic(bootstrap, topic, partitions, args.records, args.value_size, compression)
                ours: float | None = None
                for client in clients:
                    cmd = [
                        sys.executable,
                        __file__,
                        "--child",
                        "--client",
                        client,
                        "--bootstrap",
                        bootstrap,
                        "--topic",
                        topic,
                        "--partitions",
                        str(partitions),
                        "--records",
                        str(args.records),
                    ]
                    cmd += ["--profile"] if args.profile else []
                    env = FALLBACK_ENV if client == "ours-python" else None
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
                    if out.returncode != 0:
                        print(f"{client}: failed: {out.stderr.strip().splitlines()[-1:]}")
                        continue
                    if args.profile:
                        print(out.stderr)
                    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
                    rate = args.records / res["elapsed"]
                    if client == "pykafka_client":
                        ours = rate
                    ratio = f"{rate / ours:.2f}x" if ours else "-"
                    print(
                        f"{partitions}p {compression:<10}{client:<17}{rate:>10.0f}"
                        f"{rate * args.value_size / 1e6:>8.1f}{ratio:>9}{res['rss_mib']:>9.0f}"
                        f"{res.get('cpu_s', 0) / args.records * 1e6:>8.2f}",
                        flush=True,
                    )
            if not args.profile:
                rebalance_table(bootstrap, args.heartbeat_ms)
        finally:
            broker.terminate()
            broker.wait(30)


if __name__ == "__main__":
    main()
