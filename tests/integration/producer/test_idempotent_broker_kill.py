"""The idempotent producer (acks=all, Java's defaults otherwise) across a kill -9 of its only broker and a restart on
the same data dir and port, on the compiled kernel and on the pure-Python reference (``record_impl``), through
``send()`` and through ``send_batch``.

The records in flight when the broker dies are retried with their sequence numbers; the restarted broker rebuilds
the producer's state from its log and answers a batch it already has as a duplicate with its original offset. So
every future succeeds, and the log holds each record exactly once, in the order sent, at the offset its future
reported."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pykafka_client import KafkaProducer
from tests.integration.broker.broker_process import consume_all, create_topic
from tests.integration.transactions.harness import MiniBrokerProcess, read_partition_ours
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("record_impl"),
              pytest.mark.timeout(180)]

TOPIC = "idempotent-kill"
CHUNK = 100  # records a send_batch call (and a progress step for send())
BEFORE_KILL = 3000  # records acknowledged before the kill
AFTER_RESTART = 3000  # records acknowledged after the restart before the producer stops


def value(i: int) -> bytes:
    return b"record-%08d" % i


class Stream:
    """Sends ``value(0)``, ``value(1)``, ... on its own thread, a chunk at a time, until stopped; keeps each chunk's
    future(s) and counts the records acknowledged."""

    def __init__(self, producer: KafkaProducer, api: str) -> None:
        self.producer = producer
        self.api = api
        self.sent = 0
        self.chunks: list[tuple[int, Any]] = []  # (first record, a send_batch future or a list of send() futures)
        self.acked = 0
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _count(self, n: int) -> Callable[[Any], None]:
        def done(f: Any) -> None:
            with self.lock:
                if f.exception() is None:
                    self.acked += n
                else:
                    self.errors.append(f.exception())
        return done

    def _run(self) -> None:
        while not self.stop.is_set():
            values = [value(self.sent + i) for i in range(CHUNK)]
            if self.api == "send_batch":
                batch_future = self.producer.send_batch(TOPIC, values, [b"k"] * CHUNK)
                batch_future.add_done_callback(self._count(CHUNK))
                self.chunks.append((self.sent, batch_future))
            else:
                futures = [self.producer.send(TOPIC, v, key=b"k") for v in values]
                for f in futures:
                    f.add_done_callback(self._count(1))
                self.chunks.append((self.sent, futures))
            self.sent += CHUNK

    def wait_acked(self, at_least: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.acked < at_least and not self.errors:
            assert time.monotonic() < deadline, f"{self.acked} records acknowledged, {at_least} expected"
            time.sleep(0.01)
        assert not self.errors, self.errors[:3]

    def offsets(self) -> list[int]:
        """Each record's offset as its future reports it, in the order sent."""
        out: list[int] = []
        for first, chunk in self.chunks:
            assert len(out) == first
            if self.api == "send_batch":
                out.extend(md.offset for md in chunk.result(0))
            else:
                out.extend(f.result(0).offset for f in chunk)
        return out


@pytest.mark.parametrize("api", ["send", "send_batch"])
def test_every_record_once_in_order_across_a_broker_kill9_and_restart(tmp_path: Path, api: str) -> None:
    broker = MiniBrokerProcess(tmp_path / "data")
    try:
        create_topic(broker.bootstrap, TOPIC)
        producer: KafkaProducer = KafkaProducer({
            "bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
            "request.timeout.ms": 5000, "reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200,
        })
        stream = Stream(producer, api)
        try:
            stream.thread.start()
            stream.wait_acked(BEFORE_KILL, timeout=30)
            broker.kill9()  # mid-stream: batches are in flight and more are queued
            acked_at_kill, sent_at_kill = stream.acked, stream.sent
            time.sleep(0.3)
            broker.start()
            stream.wait_acked(acked_at_kill + AFTER_RESTART, timeout=60)
            assert sent_at_kill > acked_at_kill  # records were outstanding when the broker died
        finally:
            stream.stop.set()
            stream.thread.join(30)
            producer.flush(60)
            producer.close(10)
        assert not stream.errors, stream.errors[:3]
        assert stream.acked == stream.sent
        offsets = stream.offsets()
        assert offsets == list(range(stream.sent))  # at the offset its future reported, none twice
        records = consume_all(broker.bootstrap, TOPIC)
        assert [o for o, _ in records] == list(range(stream.sent))
        assert [v for _, v in records] == [value(i) for i in range(stream.sent)]  # once each, in the order sent
        # and read back by our own consumer the same
        assert read_partition_ours(broker.bootstrap, TOPIC, 0, "read_uncommitted") == [v for _, v in records]
    finally:
        broker.stop()
