"""``mini-broker --cluster N``: a controller and N broker processes, stopped together by SIGTERM; a relative
``--data-dir`` is the user's working directory's (every broker's data lands there, none in the package's tree)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from pykafka_client import AdminClient

ROOT = Path(__file__).resolve().parents[3]


@contextlib.contextmanager
def cli_cluster(tmp_path: Path, *args: str) -> Iterator[list[str]]:
    """``mini-broker --cluster`` with ``args`` in ``tmp_path``; yields its output up to the bootstrap servers line,
    then stops it with SIGTERM and checks it exits 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mini_broker", "--cluster", *args, "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path), env=env)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("mini_broker cluster bootstrap servers "):
                break
        yield lines
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_starts_a_cluster_whose_brokers_all_answer_metadata(tmp_path: Path) -> None:
    with cli_cluster(tmp_path, "2", "--data-dir", "cluster-data", "--listeners", "PLAINTEXT://127.0.0.1:0") as lines:
        bootstrap = lines[-1].split()[-1] if lines[-1].startswith("mini_broker cluster bootstrap servers ") else ""
        assert bootstrap, "".join(lines)
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            assert sorted(n.id for n in admin.describe_cluster(timeout=30).nodes) == [0, 1]
        data = tmp_path / "cluster-data"
        assert sorted(p.name for p in data.iterdir()) == ["broker-0", "broker-1", "controller"]
        assert all(any((data / f"broker-{i}").iterdir()) for i in (0, 1))  # the brokers wrote there


def test_cli_cluster_with_a_sasl_listener_advertises_it(tmp_path: Path) -> None:
    """``--listeners PLAINTEXT://...,SASL_PLAINTEXT://...``: every broker gets both; the SASL ones are printed and a
    client bootstrapping from one sees the SASL_PLAINTEXT ports of all brokers."""
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" user_admin="admin-secret";')
    with cli_cluster(tmp_path, "2", "--data-dir", "cluster-data",
                     "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                     "--override", "sasl.enabled.mechanisms=PLAIN",
                     "--override", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}") as lines:
        sasl = {int(line.split()[2]): line.split("//")[1].strip() for line in lines
                if line.startswith("mini_broker broker ") and "SASL_PLAINTEXT://" in line}
        assert sorted(sasl) == [0, 1], "".join(lines)
        config = {"bootstrap.servers": sasl[1], "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.username": "admin", "sasl.password": "admin-secret"}
        with AdminClient(config) as admin:
            nodes = admin.describe_cluster(timeout=30).nodes
        assert {n.id: f"{n.host}:{n.port}" for n in nodes} == sasl
