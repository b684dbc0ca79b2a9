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

Rebalance (issue 24; `--rebalance-only` for just this table, `--no-rebalance` to skip it): for each client (ours,
confluent-kafka) and protocol (classic eager = range, classic cooperative-sticky, consumer = KIP-848), a group of
3 members consuming 12 partitions while a producer writes 2,000 records/s; a 4th member joins, then leaves (close
with leave). Per event: the time from the 4th member's subscribe() (or close()) until every partition is owned
again, exactly once, in fair shares (from the members' rebalance callbacks); the records produced and received in
that window; and the longest time one of the 3 staying members went without records in it (its stall). One broker per heartbeat interval
(`--heartbeats-ms 3000,500`): classic members get it as heartbeat.interval.ms, consumer-protocol members from the
broker's group.consumer.heartbeat.interval.ms. Each run is bounded (30 s per event).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.peak_rss import peak_rss_mib  # noqa: E402

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


#: the rebalance table's protocols: (our partition.assignment.strategy / group.protocol settings) per name
REBALANCE_PROTOCOLS = ["classic-eager", "classic-cooperative", "consumer"]
REBALANCE_CLIENTS = ["pykafka_client", "confluent-kafka"]
REBALANCE_PARTITIONS = 12
#: records/s the producer writes over all partitions during a rebalance run
REBALANCE_RATE = 2000


def _group_config(protocol: str, heartbeat_ms: int) -> dict[str, Any]:
    """A member's group settings: classic members get the heartbeat interval and strategy; consumer-protocol
    members take both from the broker (Java and librdkafka reject them with group.protocol=consumer)."""
    if protocol == "consumer":
        return {"group.protocol": "consumer"}
    strategy = "range" if protocol == "classic-eager" else "cooperative-sticky"
    return {"partition.assignment.strategy": strategy, "heartbeat.interval.ms": heartbeat_ms}


class _Member:
    """One group member on its own thread, ours or confluent-kafka's; records which partitions it owns (from its
    rebalance callbacks) and how many records it received."""

    def __init__(self, client: str, conf: dict[str, Any], topic: str, state: _RebalanceState, i: int) -> None:
        import threading

        self.client, self.conf, self.topic, self.state, self.i = client, conf, topic, state, i
        self.go = threading.Event()
        self.leave = threading.Event()
        self.started_at = 0.0
        self.leaving_at = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _revoked(self, tps: Any) -> None:
        with self.state.lock:
            self.state.owned[self.i] -= {(tp.topic, tp.partition) for tp in tps}

    def _assigned(self, tps: Any) -> None:
        with self.state.lock:
            self.state.owned[self.i] |= {(tp.topic, tp.partition) for tp in tps}

    def _received(self, n: int) -> None:
        if not n:
            return
        now = time.perf_counter()
        with self.state.lock:
            self.state.consumed[self.i] += n
            self.state.max_gap[self.i] = max(self.state.max_gap[self.i], now - self.state.last_received[self.i])
            self.state.last_received[self.i] = now

    def _run(self) -> None:
        try:
            self.go.wait(self.state.bound_s * 4)
            if self.client == "confluent-kafka":
                self._run_confluent()
            else:
                self._run_ours()
        except BaseException as e:  # reported by the caller
            self.state.errors.append(e)
        finally:
            with self.state.lock:
                self.state.owned[self.i] = set()

    def _run_ours(self) -> None:
        from pykafka_client import ConsumerRebalanceListener, KafkaConsumer

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                member._revoked(revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member._assigned(assigned)

            def on_partitions_lost(self, lost: Any) -> None:
                member._revoked(lost)

        c: KafkaConsumer[Any, Any] = KafkaConsumer(self.conf)
        self.started_at = time.perf_counter()
        c.subscribe([self.topic], Listener())
        while not self.state.stop.is_set() and not self.leave.is_set():
            self._received(c.poll(0.05).count())
        self.leaving_at = time.perf_counter()
        c.close(10)

    def _run_confluent(self) -> None:
        import confluent_kafka

        c = confluent_kafka.Consumer(self.conf)
        self.started_at = time.perf_counter()
        c.subscribe(
            [self.topic],
            on_assign=lambda _c, tps: self._assigned(tps),
            on_revoke=lambda _c, tps: self._revoked(tps),
            on_lost=lambda _c, tps: self._revoked(tps),
        )
        while not self.state.stop.is_set() and not self.leave.is_set():
            self._received(sum(1 for m in c.consume(500, 0.05) if m.error() is None))
        self.leaving_at = time.perf_counter()
        c.close()


class _RebalanceState:
    def __init__(self, members: int, bound_s: float) -> None:
        import threading

        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.bound_s = bound_s
        self.owned: list[set[tuple[str, int]]] = [set() for _ in range(members)]
        self.consumed = [0] * members
        #: per member: when it last received records, and the longest wait between receptions since reset()
        self.last_received = [0.0] * members
        self.max_gap = [0.0] * members
        self.produced = 0
        self.errors: list[BaseException] = []

    def settled(self, members: list[int]) -> bool:
        """Every partition owned exactly once, by exactly these members, each with its fair share."""
        sets = [self.owned[i] for i in members]
        sizes = sorted(len(s) for s in sets)
        others = [i for i in range(len(self.owned)) if i not in members]
        fair = REBALANCE_PARTITIONS // len(members)
        return (
            sum(sizes) == REBALANCE_PARTITIONS
            and len(set().union(*sets)) == REBALANCE_PARTITIONS
            and sizes[0] >= fair
            and sizes[-1] <= fair + 1
            and not any(self.owned[i] for i in others)
        )

    def wait(self, cond: Any, what: str) -> float:
        deadline = time.perf_counter() + self.bound_s
        while time.perf_counter() < deadline and not self.errors:
            with self.lock:
                if cond():
                    return time.perf_counter()
            time.sleep(0.002)
        raise RuntimeError(f"{what} within {self.bound_s} s: errors {self.errors}, owned {self.owned}")

    def snapshot(self) -> tuple[int, list[int]]:
        """Records produced and received so far; restarts the reception gaps."""
        with self.lock:
            now = time.perf_counter()
            self.last_received = [now] * len(self.last_received)
            self.max_gap = [0.0] * len(self.max_gap)
            return self.produced, list(self.consumed)

    def longest_gap(self, members: list[int]) -> float:
        """The longest time one of ``members`` went without records since the last snapshot()."""
        with self.lock:
            now = time.perf_counter()
            return max(max(self.max_gap[i], now - self.last_received[i]) for i in members)


def run_rebalance(
    bootstrap: str, client: str, protocol: str, heartbeat_ms: int, bound_s: float = 30.0
) -> dict[str, float]:
    """A 4th member joins 3 consuming members, then leaves again (close with leave). Per event: seconds until
    every partition is owned again (exactly once, fair shares: `_RebalanceState.settled`), records produced
    during that window and records the members received in it, how many of the 3 staying members received
    nothing in it, and the longest time one of them went without records (about the poll period when the
    rebalance never stops them)."""
    import threading
    import uuid

    from pykafka_client import AdminClient, KafkaProducer
    from pykafka_client.admin.types import NewTopic

    topic = f"rebalance-{protocol}-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, REBALANCE_PARTITIONS, 1)], timeout=10)
    conf = {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "latest", **_group_config(protocol, heartbeat_ms)}  # fmt: skip
    state = _RebalanceState(4, bound_s)
    members = [_Member(client, conf, topic, state, i) for i in range(4)]

    def produce() -> None:
        p = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        try:
            i = 0
            while not state.stop.is_set():
                p.send(topic, value=b"x", partition=i % REBALANCE_PARTITIONS)
                i += 1
                with state.lock:
                    state.produced = i
                if i % REBALANCE_PARTITIONS == 0:
                    time.sleep(REBALANCE_PARTITIONS / REBALANCE_RATE)
        except BaseException as e:
            state.errors.append(e)
        finally:
            p.close(5)

    def window(start: float, end: float, before: tuple[int, list[int]], stayers: list[int]) -> dict[str, float]:
        gap = state.longest_gap(stayers)
        after = state.snapshot()
        consumed = [after[1][i] - before[1][i] for i in range(4)]
        return {"s": end - start, "produced": after[0] - before[0], "consumed": sum(consumed),
                "idle": sum(1 for i in stayers if consumed[i] == 0), "gap": gap}  # fmt: skip

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    for m in members:
        m.thread.start()
    try:
        for m in members[:3]:
            m.go.set()
        state.wait(lambda: state.settled([0, 1, 2]), "the 3-member group did not settle")
        time.sleep(1.0)  # steady consumption before the join
        before = state.snapshot()
        members[3].go.set()
        end = state.wait(lambda: state.settled([0, 1, 2, 3]), "the 4-member group did not settle")
        join = window(members[3].started_at, end, before, [0, 1, 2])
        time.sleep(1.0)
        before = state.snapshot()
        members[3].leave.set()
        end = state.wait(lambda: state.settled([0, 1, 2]) and not members[3].thread.is_alive(),
                         "the group did not settle after the 4th member left")  # fmt: skip
        # the window starts at close(): the member's own revocation callbacks run inside it
        leave = window(members[3].leaving_at, end, before, [0, 1, 2])
        return {**{f"join_{k}": v for k, v in join.items()}, **{f"leave_{k}": v for k, v in leave.items()}}
    finally:
        state.stop.set()
        for t in [*(m.thread for m in members), producer]:
            t.join(15)


def child(args: argparse.Namespace) -> None:
    if args.rebalance_protocol:
        print(json.dumps(run_rebalance(args.bootstrap, args.client, args.rebalance_protocol, args.heartbeat_ms)))
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


def start_broker(data_dir: str, overrides: list[str] | None = None) -> tuple[subprocess.Popen[str], str]:
    extra = [arg for o in overrides or [] for arg in ("--override", o)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_broker", "--listeners", "PLAINTEXT://127.0.0.1:0", "--data-dir", data_dir,
         "--log-level", "WARNING", "--override", "num.partitions=1",
         "--override", "group.initial.rebalance.delay.ms=0", *extra],
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


def rebalance_table(heartbeats_ms: list[int], clients: list[str]) -> None:
    """One broker per heartbeat interval (the consumer protocol's interval is the broker's
    group.consumer.heartbeat.interval.ms; classic members get it as heartbeat.interval.ms)."""
    print(
        f"\nrebalance: a 4th member joins 3 consuming members, then leaves (close); {REBALANCE_PARTITIONS} "
        f"partitions, {REBALANCE_RATE} records/s produced; time until every partition is owned again, "
        "records produced / received in that window, the longest a staying member went without records in it"
    )
    print(f"{'hb ms':>6} {'client':<16}{'protocol':<21}{'join ms':>8}{'prod/recv':>11}{'stall ms':>9}"
          f"{'leave ms':>9}{'prod/recv':>11}{'stall ms':>9}")  # fmt: skip
    for hb in heartbeats_ms:
        overrides = [f"group.consumer.heartbeat.interval.ms={hb}", "group.consumer.min.heartbeat.interval.ms=100"]
        with tempfile.TemporaryDirectory(prefix="bench-rebalance-") as data_dir:
            broker, bootstrap = start_broker(data_dir, overrides)
            try:
                for client in clients:
                    for protocol in REBALANCE_PROTOCOLS:
                        row = f"{hb:>6} {client:<16}{protocol:<21}"
                        cmd = [sys.executable, __file__, "--child", "--rebalance-protocol", protocol, "--client",
                               client, "--bootstrap", bootstrap, "--heartbeat-ms", str(hb)]  # fmt: skip
                        try:
                            out = subprocess.run(cmd, capture_output=True, text=True, timeout=150, cwd=ROOT)
                        except subprocess.TimeoutExpired:
                            print(f"{row}timeout", flush=True)
                            continue
                        if out.returncode != 0:
                            print(f"{row}failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
                            continue
                        r: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
                        print(
                            f"{row}{r['join_s'] * 1000:>8.0f}{r['join_produced']:>6.0f}/{r['join_consumed']:<4.0f}"
                            f"{r['join_gap'] * 1000:>9.0f}{r['leave_s'] * 1000:>9.0f}"
                            f"{r['leave_produced']:>6.0f}/{r['leave_consumed']:<4.0f}{r['leave_gap'] * 1000:>9.0f}",
                            flush=True,
                        )
            finally:
                broker.terminate()
                broker.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--profile", action="store_true", help="profile pykafka_client only (1 partition)")
    ap.add_argument("--compression", default="none", help="compression of the profiled config (none, lz4, ...)")
    ap.add_argument("--rebalance-only", action="store_true", help="only the rebalance table")
    ap.add_argument("--no-rebalance", action="store_true", help="skip the rebalance table")
    ap.add_argument(
        "--heartbeats-ms",
        default="3000,500",
        help="heartbeat intervals of the rebalance runs, one broker each (comma-separated)",
    )
    ap.add_argument("--rebalance-clients", default=",".join(REBALANCE_CLIENTS))
    ap.add_argument("--heartbeat-ms", type=int, default=3000, help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rebalance-protocol", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--partitions", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    heartbeats = [int(h) for h in args.heartbeats_ms.split(",")]
    if args.rebalance_only:
        rebalance_table(heartbeats, args.rebalance_clients.split(","))
        return
    with tempfile.TemporaryDirectory(prefix="bench-consumer-") as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            configs = [(1, args.compression)] if args.profile else [(1, "none"), (1, "lz4"), (6, "none"), (6, "lz4")]
            clients = ["pykafka_client"] if args.profile else args.clients.split(",")
            print(f"{args.records} records x {args.value_size} B, mini_broker in its own process")
            print(
                f"{'config':<14}{'client':<17}{'rec/s':>10}{'MB/s':>8}{'vs ours':>9}{'RSS MiB':>9}"
                "  CPU us/record (process, all threads; pykafka_client and ours-python: record kernel on/off)"
            )
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
        finally:
            broker.terminate()
            broker.wait(30)
    if not args.profile and not args.no_rebalance:
        rebalance_table(heartbeats, args.rebalance_clients.split(","))


if __name__ == "__main__":
    main()
