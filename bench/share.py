"""Share groups (KIP-932): pykafka_client's KafkaShareConsumer vs confluent-kafka's ShareConsumer in one run.

    .venv/bin/python bench/share.py                    # 100k x 100-byte records; 1, 4, 8 consumers; redelivery
    .venv/bin/python bench/share.py --records 20000 --consumers 1,4 --repeats 1   # quicker
    .venv/bin/python bench/share.py --no-redelivery     # only the throughput table

A mini_broker runs in its own process (share.auto.offset.reset=earliest). One one-partition topic is filled once
with confluent-kafka's producer (batch.size 64 KiB, linger 20 ms).

Throughput: N share consumers (1, 4, 8) of one new share group on that ONE partition, each in its own process (so
our pure-Python consumers do not share one GIL while librdkafka's do not need to: processes are fair to both),
implicit acknowledgement (each poll accepts the previous one's records). Every consumer is built and subscribed
first; the clock starts when they are all told to poll and stops when together they have received every record
(a shared counter). Output: records/s (join included) and steady records/s (first record to last), ratios to ours
at the same N, ms to the first record, each member's share of the records, and how many records were delivered
more than once ("again": a lock expiring mid-run would show here).

Redelivery: two members of a new share group (each in its own process) poll an empty topic; `--held` records
(200) are produced in one batch, so the broker hands them all to one member, which stops polling at once (implicit
mode: acquired, not acknowledged) and is SIGKILLed. Measured: the time from the kill until the other member has
received the first and then all of them again (delivery count 2), and from the killed member's poll that returned
them, against the broker's group.share.record.lock.duration.ms (`--lock-ms`, 2000 by default). Both members are
the same client; `--repeats` runs each, the median is printed.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CLIENTS = ["pykafka_client", "confluent-kafka"]
#: how long one measurement may take before it is reported as a timeout
BOUND_S = 120.0


class _Consumer:
    """One share consumer of either client, with a poll that returns (offset, delivery count, value) tuples."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str) -> None:
        self.client = client
        if client == "confluent-kafka":
            import confluent_kafka

            self.c: Any = confluent_kafka.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        else:
            from pykafka_client import KafkaShareConsumer

            self.c = KafkaShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        self.c.subscribe([topic])

    def poll(self, timeout_s: float) -> list[tuple[int, int, bytes]]:
        if self.client == "confluent-kafka":
            out = []
            for m in self.c.poll(timeout_s):
                if m.error() is None:
                    out.append((m.offset(), m.delivery_count(), m.value() or b""))
            return out
        return [(r.offset, r.delivery_count, r.value) for r in self.c.poll(timeout_s)]

    def close(self) -> None:
        self.c.close()


def throughput_member(client: str, bootstrap: str, group: str, topic: str, n: int, ready: Synchronized[int],
                      go: Event, received: Synchronized[int], results: Any, i: int) -> None:
    """A share consumer in its own process: polls until the group has received ``n`` records together. Built
    after the start signal (librdkafka fetches from subscribe() on: built earlier it would acquire records
    before the clock starts), so each run includes joining the group; the imports are done before it."""
    # pykafka_client imports its classes lazily: the share consumer's modules (~0.2 s, several seconds when 8
    # processes start on 2 cores) are loaded here, like confluent_kafka's extension
    getattr(importlib.import_module("confluent_kafka" if client == "confluent-kafka" else "pykafka_client"),
            "ShareConsumer" if client == "confluent-kafka" else "KafkaShareConsumer")
    with ready.get_lock():
        ready.value += 1
    go.wait(BOUND_S)
    c = _Consumer(client, bootstrap, group, topic)
    mine = again = total = 0
    while received.value < n:
        batch = c.poll(0.2)
        for _offset, count, value in batch:
            total += len(value)
            again += count > 1
        if batch:
            mine += len(batch)
            with received.get_lock():
                received.value += len(batch)
    results.put((i, mine, again))
    c.close()


def run_throughput(client: str, bootstrap: str, topic: str, n: int, members: int) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    ready, received = ctx.Value("i", 0), ctx.Value("q", 0)
    go = ctx.Event()
    results = ctx.Queue()
    group = f"share-bench-{uuid.uuid4().hex[:8]}"
    procs = [ctx.Process(target=throughput_member, args=(client, bootstrap, group, topic, n, ready, go, received,
                                                         results, i), daemon=True) for i in range(members)]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + BOUND_S
        while ready.value < members and time.monotonic() < deadline:
            time.sleep(0.01)
        start = time.perf_counter()
        go.set()
        first: float | None = None
        while received.value < n and time.monotonic() < deadline + BOUND_S:
            if first is None and received.value:
                first = time.perf_counter()
            if not any(p.is_alive() for p in procs):
                raise RuntimeError(f"every member exited after {received.value} of {n} records")
            time.sleep(0.001)
        elapsed = time.perf_counter() - start
        if received.value < n:
            raise RuntimeError(f"{received.value} of {n} records within {BOUND_S} s")
        shares = [0] * members
        again = 0
        for _ in range(members):
            i, mine, redelivered = results.get(timeout=30)
            shares[i], again = mine, again + redelivered
        join = (first or start) - start
        return {"elapsed": elapsed, "join": join, "steady": elapsed - join, "shares": sorted(shares, reverse=True),
                "again": again}
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()


def redelivery_member(client: str, bootstrap: str, group: str, topic: str, i: int, ready: Any, events: Any,
                      taker_of: Any) -> None:
    """One of the two members: polls; the first to receive new records reports them and stops polling (it is
    then SIGKILLed holding them, not acknowledged); the other is told which offsets to wait for and reports when
    they come back to it."""
    c = _Consumer(client, bootstrap, group, topic)
    deadline = time.monotonic() + BOUND_S
    polls = 0
    offsets: set[int] | None = None
    first: float | None = None
    seen: set[int] = set()
    while time.monotonic() < deadline:
        batch = c.poll(0.05)
        now = time.monotonic()
        polls += 1
        if polls == 20:  # about a second of polling: joined and assigned
            ready.put(i)
        if offsets is None and any(count == 1 for _o, count, _v in batch):
            events.put(("held", i, sorted(o for o, _c, _v in batch), now))
            time.sleep(BOUND_S)  # not polling again: the records stay acquired until the SIGKILL
            return
        for offset, count, _value in batch:
            if count > 1:
                first = first or now
                seen.add(offset)
        if offsets is None and not taker_of.empty():
            offsets = set(taker_of.get())
        if offsets is not None and offsets <= seen:
            events.put(("taken", i, first, now, len(seen - offsets)))
            break
    else:
        events.put(("gave up", i, len(seen), offsets is not None))
    c.close()


def _first_event(queues: list[Any]) -> Any:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        for q in queues:
            if not q.empty():
                return q.get()
        time.sleep(0.0005)
    raise RuntimeError(f"no member received the produced records within {BOUND_S} s")


def run_redelivery(client: str, bootstrap: str, topic: str, records: int, value_size: int) -> dict[str, float]:
    """Two members join; ``records`` are produced in one batch (the broker acquires whole batches, so one
    member takes them all); that member is SIGKILLed as soon as it has them."""
    ctx = multiprocessing.get_context("spawn")
    group = f"share-redelivery-{uuid.uuid4().hex[:8]}"
    ready = ctx.Queue()
    # one events queue per member: a member SIGKILLed just after its put may die holding its queue's write lock
    # (the put's feeder thread releases it after the parent can read the message), which would block the other
    events, taker_of = [ctx.Queue(), ctx.Queue()], [ctx.Queue(), ctx.Queue()]
    procs = [ctx.Process(target=redelivery_member, args=(client, bootstrap, group, topic, i, ready, events[i],
                                                         taker_of[i]), daemon=True) for i in range(2)]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=BOUND_S)
        produce(bootstrap, topic, records, value_size)
        _held, victim, offsets, acquired = _first_event(events)
        pid = procs[victim].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        taker_of[1 - victim].put(offsets)
        event = events[1 - victim].get(timeout=BOUND_S)
        if event[0] == "held":
            raise RuntimeError("the records were split between the two members: no member held them all")
        if event[0] == "gave up":
            raise RuntimeError(f"the surviving member received {event[2]} of the {len(offsets)} records again "
                               f"within {BOUND_S} s of its start")
        _taken, _i, first, got_all, extra = event
        return {"first_ms": (first - killed) * 1000, "all_ms": (got_all - killed) * 1000,
                "since_acquired_ms": (got_all - acquired) * 1000, "records": len(offsets), "extra": extra}
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()


def start_broker(data_dir: str, lock_ms: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_broker", "--listeners", "PLAINTEXT://127.0.0.1:0", "--data-dir", data_dir,
         "--log-level", "WARNING", "--override", "num.partitions=1",
         "--override", "share.auto.offset.reset=earliest",
         "--override", f"group.share.record.lock.duration.ms={lock_ms}",
         "--override", "group.share.heartbeat.interval.ms=500"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return proc, line.strip().rsplit("//", 1)[1]


def create_topic(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    name = f"share-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(30)
    return name


def produce(bootstrap: str, topic: str, n: int, value_size: int) -> None:
    """``n`` records to partition 0 with confluent-kafka's producer (batch.size 64 KiB, linger 20 ms)."""
    import confluent_kafka

    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 65536})
    value = b"x" * value_size
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120):
        raise RuntimeError(f"the producer did not deliver {n} records to {topic} within 120 s")


def throughput_table(bootstrap: str, args: argparse.Namespace) -> None:
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, args.records, args.value_size)
    print(f"\nthroughput: {args.records} records x {args.value_size} B on ONE partition, implicit acknowledgement, "
          "each consumer in its own process; median of the repeats")
    print("rec/s: from the start signal (consumers built, join included) to the last record; steady: from the "
          "first record to the last")
    print(f"{'consumers':>9}  {'client':<17}{'rec/s':>8}{'vs ours':>8}{'first ms':>9}{'steady':>8}{'vs ours':>8}"
          f"{'again':>6}  records per member")  # fmt: skip
    for members in [int(m) for m in args.consumers.split(",")]:
        ours: tuple[float, float] | None = None
        for client in args.clients.split(","):
            runs: list[dict[str, Any]] = []
            for _ in range(args.repeats):
                try:
                    runs.append(run_throughput(client, bootstrap, topic, args.records, members))
                except Exception as e:  # one failed row does not end the table
                    print(f"{members:>9}  {client:<17}failed: {e}", flush=True)
            if not runs:
                continue
            runs.sort(key=lambda r: r["elapsed"])
            mid = runs[len(runs) // 2]
            rate, steady = args.records / mid["elapsed"], args.records / mid["steady"]
            ours = (rate, steady) if client == "pykafka_client" else ours
            ratio, steady_ratio = (f"{rate / ours[0]:.2f}x", f"{steady / ours[1]:.2f}x") if ours else ("-", "-")
            print(f"{members:>9}  {client:<17}{rate:>8.0f}{ratio:>8}{mid['join'] * 1000:>9.0f}{steady:>8.0f}"
                  f"{steady_ratio:>8}{mid['again']:>6}  {mid['shares']}", flush=True)  # fmt: skip


def redelivery_table(bootstrap: str, args: argparse.Namespace) -> None:
    print(f"\nredelivery: a member holding acquired records is SIGKILLed; time until another member has them "
          f"(group.share.record.lock.duration.ms={args.lock_ms}); median of {args.repeats}")
    print(f"{'client':<17}{'records':>8}{'first ms':>10}{'all ms':>8}{'since acquired ms':>19}"
          "   each run's all ms (from the kill)")
    for client in args.clients.split(","):
        runs: list[dict[str, float]] = []
        for _ in range(args.repeats):
            topic = create_topic(bootstrap)
            try:
                runs.append(run_redelivery(client, bootstrap, topic, args.held, args.value_size))
            except Exception as e:
                print(f"{client:<17}failed: {e!r} at line {e.__traceback__ and _last_line(e)}", flush=True)
        if not runs:
            continue
        first, all_ms, acquired = (statistics.median(r[k] for r in runs)
                                   for k in ("first_ms", "all_ms", "since_acquired_ms"))
        print(f"{client:<17}{runs[0]['records']:>8.0f}{first:>10.0f}{all_ms:>8.0f}{acquired:>19.0f}   "
              f"{[round(r['all_ms']) for r in runs]}", flush=True)  # fmt: skip


def _last_line(e: BaseException) -> int:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_next.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb.tb_lineno if tb is not None else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--consumers", default="1,4,8", help="the share group sizes (comma-separated)")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lock-ms", type=int, default=2000, help="group.share.record.lock.duration.ms")
    ap.add_argument("--held", type=int, default=200, help="records the killed member holds (one batch)")
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--no-redelivery", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-share-") as data_dir:
        broker, bootstrap = start_broker(data_dir, args.lock_ms)
        try:
            print("share groups: pykafka_client's KafkaShareConsumer vs confluent-kafka's ShareConsumer, "
                  "mini_broker in its own process")
            if not args.no_throughput:
                throughput_table(bootstrap, args)
            if not args.no_redelivery:
                redelivery_table(bootstrap, args)
        finally:
            broker.terminate()
            broker.wait(30)


if __name__ == "__main__":
    main()
