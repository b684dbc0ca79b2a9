"""Start and stop a noida-db Kafka endpoint (a second independent Kafka-compatible broker) for
integration tests; used by the ``noida_broker`` fixture in ``tests/integration/conftest.py``.

noida-db keeps its port for a while after it stops, so every start uses a fresh port.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

from tests.integration.tansu import free_port, wait_for_port


def noida_binary() -> Path | None:
    """The noida-db server binary inside the ``noida_db`` package (not the ``.venv/bin`` launcher, which
    runs it as a child process that would outlive a killed launcher), or None if not installed."""
    spec = importlib.util.find_spec("noida_db")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "noida-db"
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


class NoidaBroker:
    def __init__(self, binary: Path, data_dir: Path, log_path: Path | None = None) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.log_path = log_path
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [
                str(self.binary), "start", "--data-dir", str(self.data_dir), "--host", "127.0.0.1",
                "--only", "kafka", "--kafka-port", str(self.port),
            ],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
        )
        if not isinstance(out, int):
            out.close()
        if not wait_for_port(self.port, timeout_s):
            self.stop()
            raise RuntimeError(f"noida-db did not start listening on {self.port} within {timeout_s} s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
