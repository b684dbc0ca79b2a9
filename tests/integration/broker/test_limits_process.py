"""The broker in its own process under memory pressure and descriptor exhaustion, measured from outside
(/proc/PID/status VmRSS, /proc/PID/stat CPU time, its log output)."""

from __future__ import annotations

import concurrent.futures
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykafka_client.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.broker.broker_process import BrokerProcess
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(90)]

MB = 1_000_000


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def start(data_dir: Path, **kwargs: object) -> BrokerProcess:
    return BrokerProcess(data_dir, **kwargs)  # type: ignore[arg-type]


def serve_client_requests(broker: BrokerProcess, topic: str) -> float:
    """ApiVersions, Metadata and a produce on a fresh connection; returns the slowest answer in seconds."""
    records = MemoryRecordsBuilder(write_limit=1 << 20)
    records.append(int(time.time() * 1000), b"k", b"v" * 100, [])
    worst = 0.0
    with Conn(broker, timeout=5) as c:  # type: ignore[arg-type]
        for body, version in ((ApiVersionsRequest(), 3), (MetadataRequest(topics=None), 12),
                              (ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
                                  name=topic, partition_data=[ProduceRequest.PartitionProduceData(
                                      index=0, records=records.build())])]), 9)):
            t0 = time.monotonic()
            resp = c.call(body, version)
            worst = max(worst, time.monotonic() - t0)
            if isinstance(resp, MetadataResponse):
                assert resp.topics
            if isinstance(body, ProduceRequest):
                assert resp.responses[0].partition_responses[0].error_code == 0
    return worst


@pytest.fixture
def pool_broker(data_dir: Path) -> Iterator[BrokerProcess]:
    b = start(data_dir, overrides={"queued.max.request.bytes": 50 * MB, "num.network.threads": 3})
    try:
        yield b
    finally:
        b.terminate()
        b.ensure_dead()


def test_memory_stays_bounded_under_huge_announced_frames(pool_broker: BrokerProcess) -> None:
    b = pool_broker
    with Conn(b) as c:  # type: ignore[arg-type]
        c.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="mem", num_partitions=1, replication_factor=1)], timeout_ms=5000), 7)
    for _ in range(3):
        serve_client_requests(b, "mem")  # warm up every path the test uses
    time.sleep(0.5)
    baseline = b.rss_bytes()

    # 10 connections announce ~100 MB frames; each sends 10 MB of it, then stalls (100 MB > the 50 MB pool)
    attackers = [socket.create_connection(("127.0.0.1", b.port)) for _ in range(10)]
    stop = threading.Event()

    def flood(s: socket.socket) -> None:
        s.settimeout(0.5)
        data = struct.pack(">i", 104_857_000) + bytes(10 * MB)
        sent = 0
        while sent < len(data) and not stop.is_set():
            try:
                sent += s.send(data[sent:sent + 1 << 20])
            except TimeoutError:
                continue  # muted: TCP pushes back
            except OSError:
                return

    threads = [threading.Thread(target=flood, args=(s,), daemon=True) for s in attackers]
    for t in threads:
        t.start()
    peak = baseline
    worst_answer = 0.0
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        peak = max(peak, b.rss_bytes())
        worst_answer = max(worst_answer, serve_client_requests(b, "mem"))
        time.sleep(0.2)
    peak = max(peak, b.rss_bytes())
    stop.set()
    for s in attackers:
        s.close()
    for t in threads:
        t.join(5)
    time.sleep(1.5)
    serve_client_requests(b, "mem")
    after = b.rss_bytes()
    print(f"rss baseline={baseline / MB:.1f}MB peak={peak / MB:.1f}MB after={after / MB:.1f}MB "
          f"slowest answer={worst_answer * 1000:.0f}ms")
    assert peak < baseline + 60 * MB
    assert worst_answer < 1.0
    assert after < baseline + 20 * MB


HOLD_S = 20.0  # as the issue states it: 300 connections held 20 s, at most 200 log lines and 3 CPU-s


@pytest.mark.skipif(not Path("/usr/bin/prlimit").exists(), reason="needs util-linux prlimit")
def test_descriptor_exhaustion_backs_off_and_recovers(data_dir: Path) -> None:
    b = start(data_dir, overrides={"num.network.threads": 1}, wrapper=["/usr/bin/prlimit", "--nofile=128:128"])
    try:
        with Conn(b) as c:  # type: ignore[arg-type]
            c.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="fd", num_partitions=1, replication_factor=1)], timeout_ms=5000), 7)
        existing = Conn(b, timeout=5)  # type: ignore[arg-type]
        existing.call(ApiVersionsRequest(), 3)
        lines_before, cpu_before = len(b.output), b.cpu_seconds()
        held: list[socket.socket] = []
        for _ in range(300):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", b.port))
            held.append(s)
        phase_end = time.monotonic() + HOLD_S
        while time.monotonic() < phase_end:
            t0 = time.monotonic()
            existing.call(ApiVersionsRequest(), 3)  # existing connections are still served
            assert time.monotonic() - t0 < 1.0
            time.sleep(0.5)
        lines = b.output[lines_before:]
        cpu = b.cpu_seconds() - cpu_before
        for s in held:
            s.close()
        t0 = time.monotonic()
        while True:  # a new connection is served once descriptors are free again
            try:
                serve_client_requests(b, "fd")
                break
            except OSError:
                assert time.monotonic() - t0 < 2.0
                time.sleep(0.05)
        recovered_s = time.monotonic() - t0
        existing.close()
        paused = [line for line in lines if "event=accept_paused" in line]
        print(f"phase {HOLD_S}s: {len(lines)} log lines ({len(paused)} accept_paused), {cpu:.2f} CPU-s; "
              f"served again after {recovered_s:.2f}s")
        assert len(lines) <= 200 * HOLD_S / 20
        assert cpu <= 3.0 * HOLD_S / 20
        assert paused, "the broker never ran out of descriptors: the test did not exercise anything"
        assert recovered_s < 2.0
    finally:
        b.terminate()
        b.ensure_dead()


def malformed_frame(i: int, rng: random.Random) -> bytes:
    """One of the malformed inputs of issue 18, chosen by ``i``."""
    kind = i % 9
    if kind == 0:  # random bytes
        return rng.randbytes(rng.randint(1, 200))
    if kind == 1:  # a random body behind a valid size, up to the 100 MiB limit, then the connection ends
        size = rng.choice([50, 5_000, 500_000, 5_000_000, 104_857_000])
        return struct.pack(">i", size) + rng.randbytes(min(size, 2_000))
    if kind == 2:  # truncated frame
        return struct.pack(">i", 100) + b"\x00\x12"
    if kind == 3:
        return struct.pack(">i", -rng.randint(1, 2**31 - 1))
    if kind == 4:
        return struct.pack(">i", 0)
    if kind == 5:  # 2 GB
        return struct.pack(">i", 2**31 - 1) + b"x" * 16
    if kind == 6:  # a real Produce v9 header, garbage body
        body = struct.pack(">hhi", 0, 9, i) + b"\x00\x04test" + rng.randbytes(300)
        return struct.pack(">i", len(body)) + body
    if kind == 7:  # unknown key / version
        body = struct.pack(">hhi", rng.choice([999, 3]), rng.choice([99, -1]), i) + b"\x00\x00"
        return struct.pack(">i", len(body)) + body
    body = struct.pack(">hhi", 3, 12, i) + struct.pack(">h", 30_000) + b"short"  # a header string that lies
    return struct.pack(">i", len(body)) + body


@pytest.mark.timeout(240)  # the send bound below (150 s) plus the checks
@pytest.mark.parametrize("count", [1000, 5000])
def test_malformed_frames_leave_memory_bounded_and_the_broker_serving(data_dir: Path, count: int) -> None:
    b = start(data_dir, overrides={"num.network.threads": 3})
    try:
        with Conn(b) as c:  # type: ignore[arg-type]
            c.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="bad", num_partitions=1, replication_factor=1)], timeout_ms=5000), 7)
        for _ in range(3):
            serve_client_requests(b, "bad")
        time.sleep(0.5)
        baseline = b.rss_bytes()
        peak = [baseline]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], b.rss_bytes())
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rng = random.Random(count)
        frames = [malformed_frame(i, rng) for i in range(count)]
        # a bound against a hang, not a speed check: 5,000 connections take ~25 s on a quiet 2-core box and were
        # seen to miss a 40 s bound while another process used a core
        t_end = time.monotonic() + 150

        def send_all(worker: int) -> int:
            sent = 0
            for data in frames[worker::8]:
                if time.monotonic() > t_end:
                    break
                with socket.create_connection(("127.0.0.1", b.port), timeout=5) as s:
                    try:
                        s.sendall(data)
                    except OSError:
                        pass  # the broker may close first
                sent += 1
            return sent

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            sent = sum(pool.map(send_all, range(8)))
        assert sent == count, f"only {sent} of {count} frames sent in time"
        # garbage pipelined after valid requests on one connection: those are answered, then it is closed
        with Conn(b, timeout=5) as c:  # type: ignore[arg-type]
            c.sock.sendall(b"".join(
                struct.pack(">i", len(p)) + p for p in [_api_versions_v0(1), _api_versions_v0(2)]) + b"\xff" * 64)
            assert len(c.recv_frame()) > 0 and len(c.recv_frame()) > 0
            assert c.closed_by_broker()
        stop.set()
        sampler.join(5)
        assert serve_client_requests(b, "bad") < 1.0
        time.sleep(1.0)
        after = b.rss_bytes()
        tracebacks = sum("Traceback" in line for line in b.output)
        print(f"{count} malformed frames: rss baseline={baseline / MB:.1f}MB peak={peak[0] / MB:.1f}MB "
              f"after={after / MB:.1f}MB tracebacks={tracebacks}")
        assert b.proc.poll() is None
        assert peak[0] < baseline + 100 * MB
        assert after < baseline + 20 * MB
        assert tracebacks == 0
    finally:
        b.terminate()
        b.ensure_dead()


def _api_versions_v0(correlation_id: int) -> bytes:
    return struct.pack(">hhi", 18, 0, correlation_id) + b"\x00\x04test"
