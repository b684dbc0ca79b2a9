"""Where the producer's wall time goes on its I/O thread, while send() runs and after it (not a test).

    .venv/bin/python bench/producer_phases.py                         # 1 and 6 partitions, acks=1
    .venv/bin/python bench/producer_phases.py --configs 1:all --switch-interval 0.0005

One KafkaProducer sends ``--records`` 100-byte records with send() (Java's defaults, linger.ms=5) to a mini_broker
in its own process, then flushes. Two phases: "send" while the loop of send() calls runs (the application thread
and the I/O thread share the GIL), "flush" after it (the I/O thread alone; with 200k records buffer.memory holds
them all, so the send loop ends long before the last request). Per phase: produce requests per second, the I/O
thread's CPU, its time blocked in select, its time off the CPU outside select (waiting for the GIL, or for a CPU
on a busy machine), the socket writes and reads of the I/O thread that took more than 1 ms of wall time (a
non-blocking call takes microseconds: the rest is waiting to get the GIL back), the requests in flight when an
iteration starts, and the broker process's CPU as a share of one core. ``--switch-interval`` sets
sys.setswitchinterval in this process only, as a diagnostic (a library must not change it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.producer import _process_cpu_s, create_topic, start_broker  # noqa: E402

_now = time.perf_counter_ns
_cpu = time.thread_time_ns


class _TimedTransport:
    """A channel's transport whose reads and writes record (start, wall ns)."""

    def __init__(self, inner: Any, writes: list[tuple[int, int]], reads: list[tuple[int, int]]) -> None:
        self._inner, self._writes, self._reads = inner, writes, reads

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def write_buffers(self, views: Any) -> int:
        t = _now()
        n: int = self._inner.write_buffers(views)
        self._writes.append((t, _now() - t))
        return n

    def read_into(self, view: Any) -> int:
        t = _now()
        n: int = self._inner.read_into(view)
        self._reads.append((t, _now() - t))
        return n


def run(bootstrap: str, broker_pid: int, partitions: int, acks: str, n: int) -> None:
    from pykafka_client import KafkaProducer
    from pykafka_client.producer.sender import Sender

    topic = f"phases-{partitions}-{acks}-{time.monotonic_ns()}"
    create_topic(bootstrap, topic, partitions)
    iterations: list[tuple[int, int, int, int, int, int]] = []  # start, wall, cpu, select ns, in flight, requests
    original = Sender.run_once

    def run_once(self: Sender) -> None:
        selector_metrics = self.client.selector.metrics  # type: ignore[attr-defined]
        in_flight, requests, select_ns = self.client.in_flight_request_count(), self.metrics.requests_sent, selector_metrics.select_time_ns_total
        t, c = _now(), _cpu()
        original(self)
        iterations.append((t, _now() - t, _cpu() - c, selector_metrics.select_time_ns_total - select_ns, in_flight,
                           self.metrics.requests_sent - requests))

    Sender.run_once = run_once  # type: ignore[method-assign]
    writes: list[tuple[int, int]] = []
    reads: list[tuple[int, int]] = []
    try:
        p = KafkaProducer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5})
        p.send(topic, b"x").result(30)
        selector = p.sender.client.selector  # type: ignore[attr-defined]
        for cid in selector.channel_ids():
            channel = selector.channel(cid)
            channel.transport = _TimedTransport(channel.transport, writes, reads)
        del iterations[:]
        value, send = b"x" * 100, p.send
        broker0, t0 = _process_cpu_s(broker_pid), _now()
        for _ in range(n):
            send(topic, value)
        t1, broker1 = _now(), _process_cpu_s(broker_pid)
        p.flush()
        t2, broker2 = _now(), _process_cpu_s(broker_pid)
        p.close()
    finally:
        Sender.run_once = original  # type: ignore[method-assign]
    print(f"{partitions}p acks={acks}: {n / ((t2 - t0) / 1e9):.0f} records/s, {sum(i[5] for i in iterations)} requests,"
          f" switch interval {sys.getswitchinterval() * 1e3:g} ms")
    for name, start, end, broker_cpu in (("send", t0, t1, broker1 - broker0), ("flush", t1, t2, broker2 - broker1)):
        its = [i for i in iterations if start <= i[0] < end]
        wall = (end - start) / 1e9
        requests = sum(i[5] for i in its)
        cpu, blocked = sum(i[2] for i in its) / 1e9, sum(i[3] for i in its) / 1e9
        off_cpu = sum(i[1] - i[2] - i[3] for i in its) / 1e9
        slow_writes = sum(1 for t, w in writes if start <= t < end and w > 1_000_000)
        slow_reads = sum(1 for t, w in reads if start <= t < end and w > 1_000_000)
        n_writes = sum(1 for t, _ in writes if start <= t < end)
        n_reads = sum(1 for t, _ in reads if start <= t < end)
        in_flight = sum(i[4] for i in its) / len(its) if its else 0.0
        print(f"  {name:<5} {wall:5.2f} s: {requests:5d} requests ({requests / wall:5.0f}/s), I/O thread CPU {cpu:.2f} s,"
              f" in select {blocked:.2f} s, off-CPU outside select {off_cpu:.2f} s; writes >1 ms {slow_writes}/{n_writes},"
              f" reads >1 ms {slow_reads}/{n_reads}; in flight at an iteration's start {in_flight:.1f};"
              f" broker {broker_cpu / wall:.0%} of a core")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--configs", default="1:1,6:1", help="comma-separated partitions:acks pairs (default: 1:1,6:1)")
    ap.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval (s) in this process,"
                    " as a diagnostic only")
    args = ap.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            for config in args.configs.split(","):
                partitions, acks = config.split(":")
                run(bootstrap, broker.pid, int(partitions), acks, args.records)
        finally:
            broker.terminate()
            broker.wait(30)


if __name__ == "__main__":
    main()
