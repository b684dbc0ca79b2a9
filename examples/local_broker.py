"""A throw-away mini_broker for the examples, in its own process.

``python -m mini_broker`` runs on a free loopback port with a temporary data directory; it is waited for
(the "listening on" line it prints) and stopped (SIGTERM, then SIGKILL) when the ``with`` block ends. A
separate process keeps the broker off the example's GIL, so the numbers the examples print are the
client's.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[1]
_LISTENING = re.compile(r"mini_broker listening on PLAINTEXT://(\S+)")


@contextlib.contextmanager
def mini_broker_process(overrides: Mapping[str, object] | None = None, start_timeout: float = 30.0) -> Iterator[str]:
    """Start ``python -m mini_broker`` and yield its bootstrap address (``host:port``)."""
    with tempfile.TemporaryDirectory(prefix="mini-broker-") as tmp:
        log_path = Path(tmp) / "broker.log"
        args = [sys.executable, "-m", "mini_broker", "--listeners", "PLAINTEXT://127.0.0.1:0",
                "--data-dir", str(Path(tmp) / "data"), "--log-level", "WARNING"]
        for key, value in (overrides or {}).items():
            args += ["--override", f"{key}={value}"]
        with log_path.open("w") as log:
            # From the checkout holding these examples, so ``-m mini_broker`` is the same tree's broker.
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=_CHECKOUT)
        try:
            yield _await_listening(proc, log_path, start_timeout)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _await_listening(proc: subprocess.Popen[bytes], log_path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        match = _LISTENING.search(log_path.read_text())
        if match:
            return match.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"mini_broker exited with code {proc.returncode} before listening:\n{log_path.read_text()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"mini_broker did not start listening within {timeout} s:\n{log_path.read_text()}")
        time.sleep(0.05)


@contextlib.contextmanager
def bootstrap_servers(given: str | None, overrides: Mapping[str, object] | None = None) -> Iterator[str]:
    """``given`` (a running cluster) if set, else a fresh mini_broker process."""
    if given:
        yield given
        return
    with mini_broker_process(overrides) as servers:
        yield servers
