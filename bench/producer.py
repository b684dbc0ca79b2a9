"""Producer throughput: pykafka_client vs kafka-python, aiokafka and confluent-kafka in one run.

    .venv/bin/python bench/producer.py                  # 200k x 100-byte values, 4 configs x 4 clients
    .venv/bin/python bench/producer.py --records 20000  # quicker
    .venv/bin/python bench/producer.py --profile        # cProfile (thread CPU time) of our send path and I/O thread
    .venv/bin/python bench/producer.py --profile --clients ours-batch   # the same for send_batch
    .venv/bin/python bench/producer.py --micro          # no broker: CPU us per send() and per record encoded +
                                                        # completed (thread CPU time, stable on a busy box)

A mini_broker runs in its own process (so its CPU does not share our GIL); each client run is a separate
process so that its peak RSS (VmHWM: ``ru_maxrss`` would carry this driver's peak over exec) is its own.
Configs: 1 and 6 partitions x acks=1 and all, linger.ms=5, default batch.size, no compression, values pre-built;
time is from the first send to the end of flush. Output: records/s per client and config, ratio to pykafka_client,
peak RSS in MiB.
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
#: "ours-batch" is KafkaProducer.send_batch (BATCH_CALL_RECORDS records per call); "ours-batch-python" the same
#: with PYKAFKA_NO_NATIVE=1. "ours-async" is AsyncKafkaProducer under asyncio (the loop-driven Sender), awaiting
#: each ``send`` as the aiokafka row does.
CLIENTS = ["pykafka_client", "ours-batch", "ours-batch-python", "ours-python", "ours-async", "kafka-python", "aiokafka",
           "confluent-kafka"]
_OURS = ("pykafka_client", "ours-batch", "ours-batch-python", "ours-python", "ours-async")
FALLBACK_ENV = {**os.environ, "PYKAFKA_NO_NATIVE": "1"}
CLIENT_MODULES = {
    "pykafka_client": "pykafka_client.producer.kafka_producer",
    "ours-python": "pykafka_client.producer.kafka_producer",
    "ours-batch": "pykafka_client.producer.kafka_producer",
    "ours-batch-python": "pykafka_client.producer.kafka_producer",
    "ours-async": "pykafka_client.aio.producer",
    "kafka-python": "kafka",
    "aiokafka": "aiokafka",
    "confluent-kafka": "confluent_kafka",
}


#: CPU seconds of our producer's threads during the timed part (filled by run_ours): "send", "io".
CPU: dict[str, float] = {}


#: records sent in the timed part of our last run (for records per produce request)
REQUEST_RECORDS = [0]


def run_ours(bootstrap: str, topic: str, n: int, acks: str, value: bytes) -> float:
    REQUEST_RECORDS[0] = n

    def send_all(p: Any) -> None:
        send = p.send
        for _ in range(n):
            send(topic, value)

    return _run_ours(bootstrap, topic, acks, value, send_all)


#: batch.size of our producer (--batch-size; 0: the default, Java's 16384)
OURS_BATCH_SIZE = 0
#: the same batch size for the peers too (--same-batch-size; 0: each client's default)
PEER_BATCH_SIZE = 0

#: --idempotence: "default" (each client's own: ours and Java's on at acks=all, librdkafka's and aiokafka's off),
#: "on" (every client idempotent at acks=all; idempotence needs acks=all, so none at acks=1) or "off" (none)
IDEMPOTENCE = "default"


def idempotence(acks: str) -> bool | None:
    """enable.idempotence for a client at ``acks`` under --idempotence (None: leave the client's default)."""
    if IDEMPOTENCE == "default":
        return None
    return IDEMPOTENCE == "on" and acks == "all"


#: records per send_batch call in the "ours-batch" rows (an Arrow batch of the Spark sink is about this size)
BATCH_CALL_RECORDS = 10_000


def run_ours_batch(bootstrap: str, topic: str, n: int, acks: str, value: bytes) -> float:
    """Our producer's send_batch: the same records, BATCH_CALL_RECORDS per call (a list of values)."""
    values = [value] * BATCH_CALL_RECORDS
    REQUEST_RECORDS[0] = n

    def send_all(p: Any) -> None:
        send_batch = p.send_batch
        for start in range(0, n, BATCH_CALL_RECORDS):
            send_batch(topic, values if n - start >= BATCH_CALL_RECORDS else values[: n - start])

    return _run_ours(bootstrap, topic, acks, value, send_all)


def _run_ours(bootstrap: str, topic: str, acks: str, value: bytes, send_all: Any) -> float:
    from pykafka_client import KafkaProducer

    extra: dict[str, Any] = {"batch.size": OURS_BATCH_SIZE} if OURS_BATCH_SIZE else {}
    if idempotence(acks) is not None:
        extra["enable.idempotence"] = idempotence(acks)
    p = KafkaProducer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, **extra})
    p.send(topic, value).result(30)  # metadata + connection outside the timing
    requests_start = p.sender.metrics.requests_sent
    io_start = _thread_cpu(p._io_thread)
    start = time.perf_counter()
    cpu0 = time.thread_time()
    send_all(p)
    CPU["send"] = time.thread_time() - cpu0
    p.flush()
    elapsed = time.perf_counter() - start
    io_end = _thread_cpu(p._io_thread)
    requests = p.sender.metrics.requests_sent - requests_start
    p.close()
    if io_start is not None and io_end is not None:
        CPU["io"] = io_end - io_start
        if requests:
            CPU["io_per_request"] = (io_end - io_start) / requests
            CPU["records_per_request"] = REQUEST_RECORDS[0] / requests
    return elapsed


def _thread_cpu(thread: Any) -> float | None:
    """CPU seconds used so far by another thread of this process (Linux /proc), None if unknown."""
    try:
        with open(f"/proc/self/task/{thread.native_id}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_kafka_python(bootstrap: str, topic: str, n: int, acks: str, value: bytes) -> float:
    import kafka

    extra: dict[str, Any] = {"batch_size": PEER_BATCH_SIZE} if PEER_BATCH_SIZE else {}
    if idempotence(acks) is not None and "enable_idempotence" in kafka.KafkaProducer.DEFAULT_CONFIG:
        extra["enable_idempotence"] = idempotence(acks)
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=acks if acks == "all" else int(acks), linger_ms=5, **extra)
    p.send(topic, value).get(30)
    start = time.perf_counter()
    send = p.send
    for _ in range(n):
        send(topic, value)
    p.flush()
    elapsed = time.perf_counter() - start
    p.close()
    return elapsed


def run_aiokafka(bootstrap: str, topic: str, n: int, acks: str, value: bytes) -> float:
    import aiokafka

    async def main() -> float:
        extra: dict[str, Any] = {"max_batch_size": PEER_BATCH_SIZE} if PEER_BATCH_SIZE else {}
        if idempotence(acks) is not None:
            extra["enable_idempotence"] = idempotence(acks)
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks if acks == "all" else int(acks), linger_ms=5,
                                      **extra)
        await p.start()
        try:
            await p.send_and_wait(topic, value)
            start = time.perf_counter()
            last = None
            for _ in range(n):
                last = await p.send(topic, value)
            await p.flush()
            if last is not None:
                await last
            return time.perf_counter() - start
        finally:
            await p.stop()

    return asyncio.run(main())


def run_ours_async(bootstrap: str, topic: str, n: int, acks: str, value: bytes) -> float:
    """Our AsyncKafkaProducer under asyncio: the aiokafka row's loop (await each send, flush, await the last)."""
    from pykafka_client.aio import AsyncKafkaProducer

    async def main() -> float:
        extra: dict[str, Any] = {"batch.size": OURS_BATCH_SIZE} if OURS_BATCH_SIZE else {}
        if idempotence(acks) is not None:
            extra["enable.idempotence"] = idempotence(acks)
        async with AsyncKafkaProducer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, **extra}) as p:
            await p.send_and_wait(topic, value)  # metadata + connection outside the timing
            requests_start = p.sync_producer.sender.metrics.requests_sent
            start = time.perf_counter()
            cpu0 = time.thread_time()
            send = p.send
            last = None
            for _ in range(n):
                last = await send(topic, value)
            await p.flush()
            if last is not None:
                await last
            elapsed = time.perf_counter() - start
            CPU["loop"] = time.thread_time() - cpu0
            requests = p.sync_producer.sender.metrics.requests_sent - requests_start
            if requests:
                CPU["records_per_request"] = n / requests
            return elapsed

    return asyncio.run(main())


def run_confluent(bootstrap: str, topic: str, n: int, acks: str, value: bytes) -> float:
    import confluent_kafka

    extra: dict[str, Any] = {"batch.size": PEER_BATCH_SIZE} if PEER_BATCH_SIZE else {}
    if idempotence(acks) is not None:
        extra["enable.idempotence"] = idempotence(acks)
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, **extra})
    p.produce(topic, value)
    p.flush(30)
    start = time.perf_counter()
    produce, poll = p.produce, p.poll
    for i in range(n):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                poll(0.01)
        if i % 1000 == 0:
            poll(0)
    p.flush()
    return time.perf_counter() - start


def run_micro(n: int, value: bytes, rounds: int = 3) -> None:
    """CPU cost of our producer without a network: ``send()`` into the accumulator with the Sender thread
    stopped (metadata injected), then the I/O-thread work per batch done by hand: encode + complete all
    futures (what ``Sender`` does per batch besides the request/response). Thread CPU time, best of rounds."""
    from pykafka_client import KafkaProducer
    from pykafka_client.producer import sender as sender_module
    from tests.doubles.responses import metadata_response, nodes

    sender_module.Sender.run = lambda self: None  # type: ignore[method-assign]
    best_send = best_encode = best_complete = float("inf")
    for _ in range(rounds):
        p = KafkaProducer({"bootstrap.servers": "127.0.0.1:9", "acks": "1", "linger.ms": 5,
                           "buffer.memory": 1 << 30, "enable.idempotence": False})
        topic = "micro"
        now = p._time.hi_res_clock_ms()
        p.metadata.add(topic, now)
        brokers = nodes(1)
        p.metadata.update(0, metadata_response(brokers, {topic: 1}, leaders={(topic, 0): 0}), False, now)
        send = p.send
        t0 = time.thread_time()
        for _ in range(n):
            send(topic, value)
        best_send = min(best_send, (time.thread_time() - t0) / n * 1e6)
        batches = [b for q in p.accumulator._topics[topic].queues.values() for b in q.batches]
        assert sum(b.record_count for b in batches) == n
        t0 = time.thread_time()
        for b in batches:
            b.records()
        best_encode = min(best_encode, (time.thread_time() - t0) / n * 1e6)
        t0 = time.thread_time()
        for b in batches:
            b.done(0, -1, None)
        best_complete = min(best_complete, (time.thread_time() - t0) / n * 1e6)
        p.close(0)
    print(f"micro: {n} records x {len(value)} B: send() {best_send:.2f} us CPU, encode {best_encode:.2f} us/record, "
          f"complete {best_complete:.2f} us/record (best of {rounds})")


def run_io_micro(bootstrap: str, topic: str, n: int, value: bytes, rounds: int, profile: bool = False) -> list[float]:
    """The I/O thread's CPU per produce request with nothing else running: ``n`` records are queued while the
    Sender is paused, then one flush sends them all (every batch ready at once, one partition, acks=1) and the
    Sender thread's CPU time is divided by the requests it sent. Best of ``rounds`` is the stable figure on a
    busy machine; returns the per-round values (seconds per request). ``profile``: cProfile (thread CPU time)
    of the I/O thread during the rounds only, printed per request to stderr (``BENCH_PROFILE_OUT=path``
    dumps the stats)."""
    import cProfile
    import pstats
    import threading

    from pykafka_client import KafkaProducer

    class PausableRunner:
        """Runs the Sender's steps on a thread, stopping between steps while paused."""

        def __init__(self, sender: Any, client_id: str) -> None:
            self.sender = sender
            self.running = threading.Event()
            self.running.set()
            self.idle = threading.Event()
            self.cpu = 0.0  # the thread's own CPU clock (ns resolution) after its last step
            self.profiler: cProfile.Profile | None = None  # enabled while running, once set
            self.thread = threading.Thread(target=self._run, name="bench-io", daemon=True)
            self.thread.start()

        def _run(self) -> None:
            self.sender.start_run()
            try:
                while True:
                    if not self.running.is_set():
                        if self.profiler is not None:
                            self.profiler.disable()
                        self.idle.set()
                        self.running.wait()
                        self.idle.clear()
                        if self.profiler is not None:
                            self.profiler.enable()
                    more = self.sender.run_step()
                    self.cpu = time.thread_time()
                    if not more:
                        break
            finally:
                self.sender.finish_run()

        def is_alive(self) -> bool:
            return self.thread.is_alive()

        def join(self, timeout: float | None = None) -> None:
            self.running.set()
            self.thread.join(timeout)

        def ensure_started(self) -> None:
            return None

    runners: list[PausableRunner] = []

    def factory(sender: Any, client_id: str) -> PausableRunner:
        runners.append(PausableRunner(sender, client_id))
        return runners[-1]

    p = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "buffer.memory": 1 << 30},
                      io_runner=factory)
    runner = runners[0]
    out: list[float] = []
    try:
        p.send(topic, value).result(30)
        p.flush()
        runner.running.clear()
        p.sender.wakeup()
        runner.idle.wait(30)
        if profile:
            runner.profiler = cProfile.Profile(time.thread_time)
        requests_total = 0
        for _ in range(rounds):
            send = p.send
            for _ in range(n):
                send(topic, value)
            requests0 = p.sender.metrics.requests_sent
            cpu0 = runner.cpu
            runner.running.set()
            p.flush()
            runner.running.clear()  # the steps after the flush are not part of the round
            p.sender.wakeup()
            runner.idle.wait(30)
            requests = p.sender.metrics.requests_sent - requests0
            requests_total += requests
            if requests:
                out.append((runner.cpu - cpu0) / requests)
    finally:
        p.close()
    if runner.profiler is not None and requests_total:
        stats = pstats.Stats(runner.profiler, stream=sys.stderr)
        total_tt = stats.total_tt  # type: ignore[attr-defined]
        print(f"I/O thread profile: {requests_total} requests, {stats.total_calls / requests_total:.0f} calls and"  # type: ignore[attr-defined]
              f" {total_tt / requests_total * 1e6:.0f} us (profiled) per request", file=sys.stderr)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2 if os.environ.get("BENCH_SORT") != "cumulative" else 3])  # type: ignore[attr-defined]
        print(f"{'us/req tottime':>15}{'us/req cum':>12}{'calls/req':>10}  function", file=sys.stderr)
        for (file, line, name), (_cc, nc, tt, ct, _callers) in rows[: int(os.environ.get("BENCH_LINES", "25"))]:
            where = f"{os.path.relpath(file, ROOT)}:{line}({name})" if file != "~" else name
            print(f"{tt / requests_total * 1e6:>15.1f}{ct / requests_total * 1e6:>12.1f}{nc / requests_total:>10.2f}  {where}",
                  file=sys.stderr)
        if os.environ.get("BENCH_PROFILE_OUT"):
            runner.profiler.dump_stats(os.environ["BENCH_PROFILE_OUT"])
    return out


RUNNERS = {
    "pykafka_client": run_ours,
    "ours-python": run_ours,
    "ours-batch": run_ours_batch,
    "ours-batch-python": run_ours_batch,
    "ours-async": run_ours_async,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "confluent-kafka": run_confluent,
}


def child(args: argparse.Namespace) -> None:
    value = b"x" * args.value_size
    if args.profile:
        import cProfile
        import pstats

        from pykafka_client.producer import sender as sender_module

        # Thread CPU time as the timer: time waiting for the GIL or in select() is not counted.
        io_prof = cProfile.Profile(time.thread_time)
        original_run = sender_module.Sender.run

        def profiled_run(self: sender_module.Sender) -> None:
            io_prof.enable()
            try:
                original_run(self)
            finally:
                io_prof.disable()

        sender_module.Sender.run = profiled_run  # type: ignore[method-assign]
        import pykafka_client.producer.kafka_producer  # noqa: F401  (imports outside the profile)

        prof = cProfile.Profile(time.thread_time)
        prof.enable()
        elapsed = RUNNERS[args.client](args.bootstrap, args.topic, args.records, args.acks, value)
        prof.disable()
        print("=== application thread (send) ===", file=sys.stderr)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(20)
        if os.environ.get("BENCH_PROFILE_OUT"):  # for pstats: <out>.send and <out>.io
            prof.dump_stats(os.environ["BENCH_PROFILE_OUT"] + ".send")
            io_prof.dump_stats(os.environ["BENCH_PROFILE_OUT"] + ".io")
        if not io_prof.getstats():  # ours-async: no I/O thread, the Sender ran in the loop (profiled above)
            print("=== no I/O thread: the Sender's steps ran in the event loop's thread, profiled above ===",
                  file=sys.stderr)
        else:
            io_stats = pstats.Stats(io_prof)
            if CPU.get("records_per_request"):
                requests = REQUEST_RECORDS[0] / CPU["records_per_request"]
                print(f"I/O thread: {io_stats.total_calls / requests:.0f} profiled calls per produce request"  # type: ignore[attr-defined]
                      f" ({requests:.0f} requests)", file=sys.stderr)
            print("=== I/O thread (Sender) ===", file=sys.stderr)
            pstats.Stats(io_prof, stream=sys.stderr).sort_stats(os.environ.get("BENCH_SORT", "tottime")).print_stats(
                int(os.environ.get("BENCH_LINES", "20")))
    else:
        # the client's imports are not per-record work: done before the CPU clock starts
        importlib.import_module(CLIENT_MODULES[args.client])
        cpu0 = time.process_time()
        elapsed = RUNNERS[args.client](args.bootstrap, args.topic, args.records, args.acks, value)
        CPU["process"] = time.process_time() - cpu0
    print(json.dumps({"elapsed": elapsed, "rss_mib": peak_rss_mib(), "cpu": CPU}))


def start_broker(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_broker", "--listeners", "PLAINTEXT://127.0.0.1:0", "--data-dir", data_dir,
         "--log-level", "WARNING", "--override", "num.partitions=1"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return proc, line.strip().rsplit("//", 1)[1]


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc; 0.0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def _cpu_text(res: dict[str, Any], n: int) -> str:
    cpu = res.get("cpu") or {}
    process = f"{cpu['process'] / n * 1e6:>8.2f}" if "process" in cpu else f"{'':>8}"
    if "loop" in cpu:
        per_request = f", {cpu['records_per_request']:.0f} records/request" if "records_per_request" in cpu else ""
        return f"{process}  loop thread {cpu['loop'] / n * 1e6:.1f}{per_request}"
    if "send" not in cpu:
        return process
    io = f"{cpu['io'] / n * 1e6:.1f}" if "io" in cpu else "?"
    per_request = (
        f"; I/O {cpu['io_per_request'] * 1e6:.0f} us/request of {cpu['records_per_request']:.0f} records"
        if "io_per_request" in cpu else ""
    )
    return f"{process}  {cpu['send'] / n * 1e6:.1f}, {io}{per_request}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--clients", default=None, help=f"comma-separated, of {','.join(CLIENTS)} (default: all; with"
                    " --profile: pykafka_client, or the first of ours given)")
    ap.add_argument("--profile", action="store_true", help="profile pykafka_client only (1 partition, acks=1); with"
                    " --io-micro: the I/O thread's profile per request")
    ap.add_argument("--micro", action="store_true", help="no broker: CPU per send() and per record on the I/O side")
    ap.add_argument("--io-micro", type=int, default=0, metavar="ROUNDS", help="the I/O thread's CPU per produce"
                    " request with nothing else running (records queued while it is paused, then flushed), best of ROUNDS")
    ap.add_argument("--batch-size", type=int, default=0, help="batch.size of our clients only (default: Java's 16384;"
                    " librdkafka's default is 1000000, so confluent-kafka's produce requests carry up to ~60x more)")
    ap.add_argument("--same-batch-size", action="store_true", help="--batch-size for every client (aiokafka's"
                    " max_batch_size, kafka-python's batch_size, confluent-kafka's batch.size)")
    ap.add_argument("--idempotence", choices=("default", "on", "off"), default="default", help="default: each"
                    " client's own (ours, as Java's, idempotent at acks=all; confluent-kafka and aiokafka not); on:"
                    " every client idempotent at acks=all; off: none")
    ap.add_argument("--configs", default=None, help="comma-separated partitions:acks pairs (default: 1:1,1:all,6:1,6:all)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--acks", default="1", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.micro:
        run_micro(args.records, b"x" * args.value_size)
        return
    global OURS_BATCH_SIZE, PEER_BATCH_SIZE, IDEMPOTENCE
    IDEMPOTENCE = args.idempotence
    OURS_BATCH_SIZE = args.batch_size
    PEER_BATCH_SIZE = args.batch_size if args.same_batch_size else 0
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-producer-") as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            if args.io_micro:
                topic = f"bench-io-{time.monotonic_ns()}"
                create_topic(bootstrap, topic, 1)
                per_request = run_io_micro(bootstrap, topic, args.records, b"x" * args.value_size, args.io_micro,
                                           args.profile)
                print(f"io-micro: {args.records} records x {args.value_size} B per round, 1 partition, acks=1: I/O thread"
                      f" CPU per produce request best {min(per_request) * 1e6:.0f} us,"
                      f" median {sorted(per_request)[len(per_request) // 2] * 1e6:.0f} us, rounds "
                      + ", ".join(f"{v * 1e6:.0f}" for v in per_request))
                return
            configs = [(1, "1")] if args.profile else [(1, "1"), (1, "all"), (6, "1"), (6, "all")]
            if args.configs:
                configs = [(int(c.split(":")[0]), c.split(":")[1]) for c in args.configs.split(",")]
            clients = (args.clients or ",".join(CLIENTS)).split(",")
            if args.profile:
                clients = [next((c for c in clients if c in _OURS), "pykafka_client")] if args.clients else ["pykafka_client"]
            ours_bs = f", {'every' if args.same_batch_size else 'our'} batch.size={args.batch_size}" if args.batch_size else ""
            idem = f", idempotence {args.idempotence}" if args.idempotence != "default" else ""
            print(f"{args.records} records x {args.value_size} B, linger.ms=5{ours_bs}{idem}, mini_broker in its own"
                  " process")
            print(f"{'config':<18}{'client':<17}{'rec/s':>10}{'MB/s':>8}{'vs ours':>9}{'RSS MiB':>9}"
                  "  CPU us/record: process, and (send thread, I/O thread); broker process")
            rates: dict[tuple[int, str], dict[str, float]] = {}
            for partitions, acks in configs:
                ours: float | None = None
                for client in clients:
                    topic = f"bench-{partitions}-{acks}-{client}-{time.monotonic_ns()}"
                    create_topic(bootstrap, topic, partitions)
                    cmd = [sys.executable, __file__, "--child", "--client", client, "--bootstrap", bootstrap,
                           "--topic", topic, "--acks", acks, "--records", str(args.records),
                           "--value-size", str(args.value_size), "--batch-size", str(args.batch_size)]
                    cmd += ["--same-batch-size"] if args.same_batch_size else []
                    cmd += ["--idempotence", args.idempotence]
                    cmd += ["--profile"] if args.profile else []
                    env = FALLBACK_ENV if client in ("ours-python", "ours-batch-python") else None
                    broker_cpu0 = _process_cpu_s(broker.pid)
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
                    broker_cpu = _process_cpu_s(broker.pid) - broker_cpu0
                    if out.returncode != 0:
                        print(f"{client}: failed: {out.stderr.strip().splitlines()[-1:]}")
                        continue
                    if args.profile:
                        print(out.stderr)
                    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
                    rate = args.records / res["elapsed"]
                    rates.setdefault((partitions, acks), {})[client] = rate
                    if client == "pykafka_client":
                        ours = rate
                    ratio = f"{rate / ours:.2f}x" if ours else "-"
                    print(f"{partitions}p acks={acks:<9}{client:<17}{rate:>10.0f}"
                          f"{rate * args.value_size / 1e6:>8.1f}{ratio:>9}{res['rss_mib']:>9.0f}{_cpu_text(res, args.records)}"
                          f"; broker {broker_cpu / args.records * 1e6:.1f}",
                          flush=True)
            _print_peer_ratios(rates)
        finally:
            broker.terminate()
            broker.wait(30)


def _print_peer_ratios(rates: dict[tuple[int, str], dict[str, float]]) -> None:
    """Each of our rows as a ratio to aiokafka and to confluent-kafka (the issue's aims), per config."""
    peers = ("aiokafka", "confluent-kafka")
    lines = []
    for (partitions, acks), by_client in rates.items():
        for client, rate in by_client.items():
            if client in peers or client == "kafka-python":
                continue
            ratios = [f"{rate / by_client[p]:.2f}x {p}" for p in peers if by_client.get(p)]
            if ratios:
                lines.append(f"{partitions}p acks={acks:<9}{client:<19}" + ", ".join(ratios))
    if lines:
        print("ratios to the peers:")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
