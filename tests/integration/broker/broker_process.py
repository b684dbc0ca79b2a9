"""A mini_broker in its own process (``python -m mini_broker``) for the durability and data-dir tests, and the
confluent-kafka helpers they share (create a topic, read a whole partition back)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ck = pytest.importorskip("confluent_kafka")
ck_admin = pytest.importorskip("confluent_kafka.admin")

ROOT = Path(__file__).resolve().parents[3]

LISTENING = re.compile(r"mini_broker listening on PLAINTEXT://([\d.]+):(\d+)")


class BrokerProcess:
    def __init__(self, data_dir: Path, log_level: str = "WARNING", module: str = "mini_broker",
                 overrides: dict[str, object] | None = None, wrapper: list[str] | None = None) -> None:
        """``module``: what ``python -m`` runs (a test wrapper of ``mini_broker``'s main may replace it);
        ``overrides``: extra ``--override`` properties; ``wrapper``: a command prefix (e.g. ``prlimit ...``)."""
        extra = [a for k, v in (overrides or {}).items() for a in ("--override", f"{k}={v}")]
        self.proc = subprocess.Popen(
            [*(wrapper or []), sys.executable, "-m", module, "--data-dir", str(data_dir), "--listeners",
             "PLAINTEXT://127.0.0.1:0", "--override", "num.io.threads=2", "--override", "num.network.threads=1",
             *extra, "--log-level", log_level],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=str(ROOT))
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

    def rss_bytes(self) -> int:
        """The broker's resident set size now (``VmRSS`` from /proc)."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def cpu_seconds(self) -> float:
        """User + system CPU time the broker has used so far (/proc/PID/stat)."""
        with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> int:
        os.kill(self.proc.pid, signal.SIGTERM)
        code = self.proc.wait(20)
        self._drain.join(5)  # the output up to the exit
        return code

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
