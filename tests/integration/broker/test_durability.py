"""Durability: the broker as a subprocess, kill -9 mid-stream, restart on the same data dir.

Every record acknowledged with acks=all must come back at the same offset, in order; a torn tail (bytes
written after the last whole batch) is never served and the log continues right after the last valid batch.
Also: SIGTERM shuts down cleanly (exit 0, clean-shutdown marker) and the topic registry survives restarts.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker.broker_process import BrokerProcess, ck, consume_all, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(120)]


def test_kill9_mid_stream_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir)
    acked: dict[int, bytes] = {}
    stop = threading.Event()
    try:
        create_topic(broker.bootstrap, "durable")
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 2,
                                "message.timeout.ms": 3000, "retries": 0, "enable.idempotence": False})

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                acked[msg.offset()] = msg.value()

        def produce_forever() -> None:
            i = 0
            while not stop.is_set():
                try:
                    producer.produce("durable", value=b"record-%08d" % i, key=b"k", on_delivery=on_delivery)
                    i += 1
                except BufferError:
                    pass
                producer.poll(0)

        th = threading.Thread(target=produce_forever, daemon=True)
        th.start()
        deadline = time.monotonic() + 30
        while len(acked) < 3000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked) >= 3000, "producer made no progress"
        broker.kill9()  # mid-stream: the producer is still sending
        time.sleep(0.5)
        stop.set()
        th.join(10)
        producer.flush(5)
    finally:
        broker.ensure_dead()
    acked_snapshot = dict(acked)

    # a torn tail: half a batch written after the last whole one
    log_files = sorted(glob.glob(str(data_dir / "durable-0" / "*.log")))
    assert log_files
    with open(log_files[-1], "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x02\x00" + os.urandom(300))

    broker = BrokerProcess(data_dir)
    try:
        records = consume_all(broker.bootstrap, "durable")
        assert [o for o, _ in records] == list(range(len(records)))  # in order, no gap, nothing past the tail
        stored = dict(records)
        for offset, value in acked_snapshot.items():
            assert stored.get(offset) == value, f"acknowledged record at offset {offset} lost or changed"
        values = [v for _, v in records]
        assert values == [b"record-%08d" % i for i in range(len(values))]
        # the log continues right after the last valid batch
        p = ck.Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        offsets: list[int] = []
        p.produce("durable", value=b"after-restart", on_delivery=lambda e, m: offsets.append(m.offset()))
        assert p.flush(15) == 0
        assert offsets == [len(records)]
        assert broker.terminate() == 0
    finally:
        broker.ensure_dead()


def test_sigterm_is_a_clean_shutdown_and_topics_survive(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir)
    try:
        create_topic(broker.bootstrap, "kept")
        p = ck.Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        for i in range(10):
            p.produce("kept", value=b"v%d" % i)
        assert p.flush(15) == 0
        assert broker.terminate() == 0
    finally:
        broker.ensure_dead()
    assert (data_dir / ".kafka_cleanshutdown").exists()
    broker = BrokerProcess(data_dir)
    try:
        assert consume_all(broker.bootstrap, "kept") == [(i, b"v%d" % i) for i in range(10)]
        assert not (data_dir / ".kafka_cleanshutdown").exists()  # removed while running
        assert broker.terminate() == 0
    finally:
        broker.ensure_dead()
