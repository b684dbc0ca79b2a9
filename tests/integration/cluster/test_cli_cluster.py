"""``mini-broker --cluster N``: a controller and N broker processes, stopped together by SIGTERM; a relative
``--data-dir`` is the user's working directory's (every broker's data lands there, none in the package's tree)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from pykafka_client import AdminClient

ROOT = Path(__file__).resolve().parents[3]


def test_cli_starts_a_cluster_whose_brokers_all_answer_metadata(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mini_broker", "--cluster", "2", "--data-dir", "cluster-data",
                             "--listeners", "PLAINTEXT://127.0.0.1:0", "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path), env=env)
    try:
        assert proc.stdout is not None
        bootstrap = ""
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("mini_broker cluster bootstrap servers "):
                bootstrap = line.split()[-1]
                break
        assert bootstrap, "".join(lines)
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            assert sorted(n.id for n in admin.describe_cluster(timeout=30).nodes) == [0, 1]
        data = tmp_path / "cluster-data"
        assert sorted(p.name for p in data.iterdir()) == ["broker-0", "broker-1", "controller"]
        assert all(any((data / f"broker-{i}").iterdir()) for i in (0, 1))  # the brokers wrote there
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
