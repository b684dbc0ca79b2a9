"""Async clients: ours under asyncio and trio vs aiokafka and our sync client, with event-loop lag, in one run.

    .venv/bin/python bench/async.py                   # 200k x 100-byte values, produce and consume
    .venv/bin/python bench/async.py --records 50000   # quicker
    .venv/bin/python bench/async.py --gc freeze       # gc.freeze() after start-up in each client process
    .venv/bin/python bench/async.py --design          # no broker needed beyond one run: what the design
                                                      # decision in docs/benchmarks.md "Async API" rests on

The workloads of bench/producer.py and bench/consumer.py (1 partition, 100-byte values; produce: acks=1,
linger.ms=5, a tight send loop then flush; consume: assign mode from the beginning, touching each value).
mini_broker runs in its own process, each client run in its own process. Event-loop lag: a task sleeping
1 ms in a loop records how late it wakes (p50/p99/max, ms) while the workload runs in another task; the
sync client has no loop ("-"). Ratios are to our sync client.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# bridge-*: our async producer with its Sender on an I/O thread bridged to the loop (the design before the
# loop-driven Sender; produce only: the consumer is the same in both)
CLIENTS = ["sync", "async-asyncio", "async-trio", "bridge-asyncio", "bridge-trio", "aiokafka"]
#: the loop-driven Sender's step times (ns) of the last produce_ours run
STEP_NS: list[int] = []
TICK_S = 0.001


def _percentiles(lags: list[float]) -> dict[str, float]:
    if len(lags) < 2:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}
    q = statistics.quantiles(lags, n=100, method="inclusive")
    return {"p50": q[49] * 1000, "p99": q[98] * 1000, "max": max(lags) * 1000}


def _run_with_lag(backend: str, work: Callable[[], Awaitable[float]]) -> tuple[float, dict[str, float]]:
    """Run ``work`` under ``backend`` with a 1 ms ticker beside it; (its elapsed seconds, lag percentiles)."""
    import anyio

    lags: list[float] = []

    async def main() -> float:
        done = anyio.Event()

        async def ticker() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                await anyio.sleep(TICK_S)
                lags.append(max(0.0, time.perf_counter() - t0 - TICK_S))

        result = 0.0
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            try:
                result = await work()
            finally:
                done.set()
        return result

    elapsed = anyio.run(main, backend=backend)
    return elapsed, _percentiles(lags)


# --- produce ---------------------------------------------------------------------------------------


def produce_sync(bootstrap: str, topic: str, n: int, value: bytes) -> float:
    from pykafka_client import KafkaProducer

    p = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    p.send(topic, value).result(30)
    start = time.perf_counter()
    send = p.send
    for _ in range(n):
        send(topic, value)
    p.flush()
    elapsed = time.perf_counter() - start
    p.close()
    return elapsed


async def produce_ours(bootstrap: str, topic: str, n: int, value: bytes, native: bool = True) -> float:
    from pykafka_client.aio import AsyncKafkaProducer

    AsyncKafkaProducer._native_sender = native
    async with AsyncKafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5}) as p:
        await p.send_and_wait(topic, value)
        if p._driver is not None:
            p._driver.step_ns = STEP_NS
        start = time.perf_counter()
        send = p.send
        last = None
        for _ in range(n):
            last = await send(topic, value)
        await p.flush()
        if last is not None:
            await last
        return time.perf_counter() - start


async def produce_aiokafka(bootstrap: str, topic: str, n: int, value: bytes) -> float:
    import aiokafka

    p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5)
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


# --- consume ---------------------------------------------------------------------------------------


def consume_sync(bootstrap: str, topic: str, n: int) -> float:
    from pykafka_client import KafkaConsumer, TopicPartition

    start = time.perf_counter()
    c: Any = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0)])
    seen = total = 0
    while seen < n:
        for r in c.poll(1.0):
            total += len(r.value)
            seen += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


async def consume_ours(bootstrap: str, topic: str, n: int) -> float:
    from pykafka_client import TopicPartition
    from pykafka_client.aio import AsyncKafkaConsumer

    start = time.perf_counter()
    c: Any = AsyncKafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    await c.assign([TopicPartition(topic, 0)])
    seen = total = 0
    while seen < n:
        for r in await c.poll(1.0):
            total += len(r.value)
            seen += 1
    elapsed = time.perf_counter() - start
    await c.close()
    return elapsed


async def consume_aiokafka(bootstrap: str, topic: str, n: int) -> float:
    import aiokafka
    from aiokafka.structs import TopicPartition

    start = time.perf_counter()
    c = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    await c.start()
    try:
        c.assign([TopicPartition(topic, 0)])
        seen = total = 0
        while seen < n:
            batches = await c.getmany(timeout_ms=1000)
            for recs in batches.values():
                for r in recs:
                    total += len(r.value)
                    seen += 1
        return time.perf_counter() - start
    finally:
        await c.stop()


def child(args: argparse.Namespace) -> None:
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    gen2: list[float] = []
    if args.gc == "freeze":
        gc.collect()
        gc.freeze()  # the objects alive after start-up (modules, classes...) are not scanned by collections
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.perf_counter()
            else:
                gen2.append((time.perf_counter() - started[0]) * 1000)

    gc.callbacks.append(on_gc)
    value = b"x" * args.value_size
    client, workload = args.client, args.workload
    lag: dict[str, float] | None = None
    cpu0 = time.process_time()
    if client == "sync":
        if workload == "produce":
            elapsed = produce_sync(args.bootstrap, args.topic, args.records, value)
        else:
            elapsed = consume_sync(args.bootstrap, args.topic, args.records)
    else:
        backend = "trio" if client.endswith("-trio") else "asyncio"

        def work() -> Awaitable[float]:
            if client == "aiokafka":
                if workload == "produce":
                    return produce_aiokafka(args.bootstrap, args.topic, args.records, value)
                return consume_aiokafka(args.bootstrap, args.topic, args.records)
            if workload == "produce":
                return produce_ours(args.bootstrap, args.topic, args.records, value, not client.startswith("bridge"))
            return consume_ours(args.bootstrap, args.topic, args.records)

        elapsed, lag = _run_with_lag(backend, work)
    cpu = time.process_time() - cpu0
    steps = _percentiles([ns / 1e9 for ns in STEP_NS]) if STEP_NS else None
    print(json.dumps({"elapsed": elapsed, "lag": lag, "cpu": cpu, "steps": steps, "nsteps": len(STEP_NS),
                      "gen2": [len(gen2), max(gen2, default=0.0)]}))


# --- design measurements ---------------------------------------------------------------------------


def design(bootstrap: str, n: int, value_size: int) -> None:
    """What an anyio-native driver would put on the loop, against what the bridge costs.

    A native driver runs the Sender's and the consumer's steps (encode batches, parse responses, the
    Fetcher's record decoding) on the event loop thread: every step's CPU time is a loop stall. We take the
    CPU time (``thread_time``, so waiting in the selector is not counted) of those steps in the sync
    clients at full speed. The bridge's cost is the per-call hand-off: a consumer call's round trip
    through the client thread, and waking a task when a record completes.
    """
    import anyio

    from pykafka_client import KafkaConsumer, KafkaProducer, TopicPartition
    from pykafka_client.aio._client_thread import ClientThread
    from pykafka_client.producer import sender as sender_module

    topic = f"design-{time.monotonic_ns()}"
    value = b"x" * value_size
    steps: list[float] = []
    original = sender_module.Sender.run_once

    def timed_run_once(self: Any, *a: Any, **kw: Any) -> Any:
        t0 = time.thread_time()
        try:
            return original(self, *a, **kw)
        finally:
            steps.append(time.thread_time() - t0)

    sender_module.Sender.run_once = timed_run_once  # type: ignore[method-assign]
    p = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    p.send(topic, value).result(30)
    steps.clear()
    for _ in range(n):
        p.send(topic, value)
    p.flush()
    p.close()
    sender_module.Sender.run_once = original  # type: ignore[method-assign]
    # CPU time of each step (thread_time: the selector's wait is not counted); steps that did work
    busy = [s for s in steps if s > 0]
    pct = _percentiles(busy)
    print(f"Sender.run_once steps doing work (a native driver would run each on the loop): {len(busy)}, "
          f"p50 {pct['p50']:.2f} ms, p99 {pct['p99']:.2f} ms, max {pct['max']:.2f} ms")

    polls: list[float] = []
    c: Any = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0)])
    seen = 0
    while seen < n:
        t0 = time.thread_time()
        recs = c.poll(1.0)
        polls.append(time.thread_time() - t0)
        seen += recs.count()
    c.close()
    pct = _percentiles(polls)
    print(f"consumer poll() steps (fetch parse + record decoding of up to 500 records): {len(polls)}, "
          f"p50 {pct['p50']:.2f} ms, p99 {pct['p99']:.2f} ms, max {pct['max']:.2f} ms")

    for backend in ("asyncio", "trio"):
        async def round_trips() -> float:
            thread = ClientThread("bench", lambda: None, lambda: None, RuntimeError)
            for _ in range(200):
                await thread.call(lambda: None)
            t0 = time.perf_counter()
            rounds = 5000
            for _ in range(rounds):
                await thread.call(lambda: None)
            thread.stop()
            return (time.perf_counter() - t0) / rounds

        per_call = anyio.run(round_trips, backend=backend)
        print(f"{backend}: one call through the client thread (queue, run, hand back): {per_call * 1e6:.1f} us")

    from concurrent.futures import Future

    from pykafka_client.aio._loop import LoopWaker

    for backend in ("asyncio", "trio"):
        async def wakes() -> float:
            waker = LoopWaker()
            count = 2000
            events = [anyio.Event() for _ in range(count)]
            futures: list[Future[None]] = [Future() for _ in range(count)]
            for f, e in zip(futures, events, strict=True):
                f.add_done_callback(lambda _f, e=e: waker.call_soon(e.set))
            t0 = time.perf_counter()
            threading.Thread(target=lambda: [f.set_result(None) for f in futures]).start()
            for e in events:
                await e.wait()
            return (time.perf_counter() - t0) / count

        per = anyio.run(wakes, backend=backend)
        print(f"{backend}: completing a record awaited by a task, from another thread: {per * 1e6:.1f} us")


def start_broker(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_broker", "--listeners", "PLAINTEXT://127.0.0.1:0", "--data-dir", data_dir,
         "--log-level", "WARNING", "--override", "num.partitions=1"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return proc, line.strip().rsplit("//", 1)[1]


def _lag_text(lag: dict[str, float] | None) -> str:
    if lag is None:
        return f"{'-':>8}{'-':>8}{'-':>8}"
    return f"{lag['p50']:>8.2f}{lag['p99']:>8.2f}{lag['max']:>8.1f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--design", action="store_true", help="the measurements behind the design decision")
    ap.add_argument("--switch-interval", type=float, default=0.0,
                    help="sys.setswitchinterval() of the client processes (default: Python's 0.005 s)")
    ap.add_argument("--gc", choices=("default", "freeze"), default="default",
                    help="freeze: gc.freeze() in the client processes before the workload (full collections then "
                         "scan only what the workload allocated, not the start-up heap)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-async-") as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            if args.design:
                design(bootstrap, args.records, args.value_size)
                return
            switch = f"{args.switch_interval or sys.getswitchinterval()} s"
            print(f"{args.records} records x {args.value_size} B, 1 partition, mini_broker in its own process;"
                  f" loop lag in ms (1 ms ticker); GIL switch interval {switch}")
            print("cpu us/rec: the client process's CPU time per record (includes start-up; steadier than rec/s"
                  " on a shared box); step p50/p99: wall time of the loop-driven Sender's steps, ms; gen2: full"
                  f" garbage collections during the run and the longest, ms (--gc {args.gc})")
            print(f"{'workload':<10}{'client':<15}{'rec/s':>10}{'vs sync':>9}{'lag p50':>8}{'p99':>8}{'max':>8}"
                  f"{'cpu us/rec':>11}{'step p50':>9}{'p99':>7}{'gen2':>6}{'max':>6}")
            topic = f"bench-async-{time.monotonic_ns()}"
            for workload in ("produce", "consume"):
                base: float | None = None
                for i, client in enumerate(args.clients.split(",")):
                    if workload == "consume" and client.startswith("bridge"):
                        continue
                    # produce: each client writes its own records; consume: every client reads the same
                    # topic, filled by the produce runs (records x clients >= records)
                    t = f"{topic}-{i}" if workload == "produce" else f"{topic}-0"
                    cmd = [sys.executable, __file__, "--child", "--client", client, "--workload", workload,
                           "--bootstrap", bootstrap, "--topic", t, "--records", str(args.records),
                           "--value-size", str(args.value_size),
                           "--switch-interval", str(args.switch_interval), "--gc", args.gc]  # fmt: skip
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
                    if out.returncode != 0:
                        print(f"{workload:<10}{client:<15} failed: {out.stderr.strip().splitlines()[-1:]}")
                        continue
                    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
                    rate = args.records / res["elapsed"]
                    if client == "sync":
                        base = rate
                    ratio = f"{rate / base:.2f}x" if base else "-"
                    cpu = res["cpu"] / args.records * 1e6
                    st = res.get("steps")
                    steps = f"{st['p50']:>9.3f}{st['p99']:>7.2f}" if st else f"{'-':>9}{'-':>7}"
                    n2, max2 = res["gen2"]
                    print(f"{workload:<10}{client:<15}{rate:>10.0f}{ratio:>9}{_lag_text(res['lag'])}{cpu:>11.1f}{steps}"
                          f"{n2:>6}{max2:>6.1f}", flush=True)
        finally:
            broker.terminate()
            broker.wait(30)


if __name__ == "__main__":
    main()
