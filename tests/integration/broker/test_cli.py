"""The ``python -m mini_broker`` command: --config with Kafka names, --override, --metrics-port, bad config."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ck = pytest.importorskip("confluent_kafka")
ck_admin = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ROOT = Path(__file__).resolve().parents[3]


def start(*args: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "mini_broker", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=str(ROOT))
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("mini_broker metrics on") or ("listening on" in line and "--metrics-port" not in args):
            break
    return proc, lines


def stop(proc: subprocess.Popen[str]) -> int:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    return proc.wait(20)


def test_config_file_overrides_and_metrics(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# test\nlisteners=PLAINTEXT://127.0.0.1:0\nnum.partitions=3\nsome.unknown.key=1\n"
                     f"log.dirs={tmp_path / 'data'}\n")
    proc, lines = start("--config", str(props), "--override", "num.io.threads=2", "--metrics-port", "0")
    try:
        text = "".join(lines)
        m = re.search(r"mini_broker listening on PLAINTEXT://127\.0\.0\.1:(\d+)", text)
        assert m, text
        assert "some.unknown.key" in text  # warned, not fatal
        bootstrap = f"127.0.0.1:{m.group(1)}"
        p = ck.Producer({"bootstrap.servers": bootstrap})
        p.produce("auto-created", b"x")
        assert p.flush(15) == 0
        md = ck_admin.AdminClient({"bootstrap.servers": bootstrap}).list_topics("auto-created", timeout=10)
        assert len(md.topics["auto-created"].partitions) == 3  # num.partitions from the file
        url = re.search(r"mini_broker metrics on (\S+)", text)
        assert url, text
        body = urllib.request.urlopen(url.group(1), timeout=5).read().decode()
        assert 'kafka_network_RequestMetrics_Requests_total{request="Produce"}' in body
        assert (tmp_path / "data" / "meta.properties").exists()
    finally:
        assert stop(proc) == 0


def test_invalid_config_exits_with_a_message_naming_the_key(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mini_broker", "--data-dir", str(tmp_path), "--listeners",
                           "PLAINTEXT://127.0.0.1:0", "--override", "num.partitions=zero"],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=30)
    assert proc.returncode == 2
    assert "num.partitions" in proc.stderr
