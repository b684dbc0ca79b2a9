"""Durability: the broker as a subprocess, kill -9 mid-stream, restart on the same data dir.

Every record acknowledged with acks=all must come back at the same offset, in order; a torn tail (bytes
written after the last whole batch) is never served and the log continues right after the last valid batch.
Also: SIGTERM shuts down cleanly (exit 0, clean-shutdown marker) and the topic registry survives restarts.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ck = pytest.importorskip("confluent_kafka")
ck_admin = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(120)]

LISTENING = re.compile(r"mini_broker listening on PLAINTEXT://([\d.]+):(\d+)")


class BrokerProcess:
    def __init__(self, data_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mini_broker", "--data-dir", str(data_dir), "--listeners",
             "PLAINTEXT://127.0.0.1:0", "--override", "num.io.threads=2", "--override", "num.network.threads=1",
             "--log-level", "WARNING"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=str(Path(__file__).resolve().parents[3]))
        self.output: list[str] = []
        self.port = -1
        deadline = time.monotonic() + 30
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.output.append(line)
            m = LISTENING.search(line)
            if m:
                self.port = int(m.group(2))
                break
        if self.port < 0:
            self.proc.kill()
            raise AssertionError("broker did not start:\n" + "".join(self.output))
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()

    def _read_rest(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> int:
        os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(20)

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def create_topic(bootstrap: str, topic: str) -> None:
    admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([ck_admin.NewTopic(topic, 1, 1)])[topic].result(15)


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None]]:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "durability", "enable.auto.commit": False,
                     "check.crcs": True})
    try:
        low, high = c.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10)
        assert low == 0
        c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None]] = []
        deadline = time.monotonic() + 30
        while len(out) < high and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            out.append((m.offset(), m.value()))
        assert len(out) == high
        return out
    finally:
        c.close()


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
