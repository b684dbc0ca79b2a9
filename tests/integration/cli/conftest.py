"""Fixtures of the ``pykafka`` CLI tests: one MiniBroker per test module (tests use their own topics and
groups, so sharing it is safe) and :func:`pykafka`, which runs the CLI's entry point (``main(argv)``) against it
in this process, as ``python -m pykafka_client.cli`` would run it: its own stdin, stdout and stderr, the exit
code it returns or exits with, a traceback and exit 1 for an uncaught error. Each run must leave nothing behind
(a client thread, an unclosed client socket, a signal handler, a logging handler: the run fails naming it).
Python's start-up and imports cost about a second a process; ``test_cli_entry_points.py`` runs the console
script, ``python -m`` and each ``bin/kafka-*.sh`` as real processes."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.cli.common import BOOTSTRAP_ENV
from pykafka_client.cli.kafka_scripts import dispatch
from pykafka_client.cli.main import main as pykafka_main

ROOT = Path(__file__).resolve().parents[3]

Run = Callable[..., "subprocess.CompletedProcess[bytes]"]


def cli_env(bootstrap: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYKAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    env["PYTHONPATH"] = str(ROOT)
    return env


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pykafka_client.cli", *args]


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    # groups form at once (no 3 s initial rebalance delay): the tests start many short group consumers
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


class _KeptBytes(io.BytesIO):
    """A captured stream whose bytes outlive ``close()`` (the CLI closes stderr when its reader went away)."""

    def close(self) -> None:
        pass


def _exit_code(code: object, stderr: io.TextIOBase) -> int:
    """The process exit code of ``sys.exit(code)``: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


def _client_threads() -> set[threading.Thread]:
    """The live threads of pykafka_client's own classes (a producer's sender, a group member's heartbeat)."""
    return {t for t in threading.enumerate() if t.is_alive() and type(t).__module__.startswith("pykafka_client.")}


@contextlib.contextmanager
def _client_sockets(older: set[threading.Thread]) -> Iterator[list[socket.socket]]:
    """The sockets created while inside, by this thread or a pykafka_client thread not in ``older`` (a
    command's clients' connections and selectors' wake-up pairs; not a broker's accepted connections, nor those
    of a client the test holds open)."""
    created: list[socket.socket] = []
    original = socket.socket.__init__

    def recording_init(self: socket.socket, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        thread = threading.current_thread()
        if thread is threading.main_thread() or (type(thread).__module__.startswith("pykafka_client.")
                                                 and thread not in older):
            created.append(self)

    socket.socket.__init__ = recording_init  # type: ignore[method-assign]
    try:
        yield created
    finally:
        socket.socket.__init__ = original  # type: ignore[method-assign]


def _process_state() -> tuple[object, ...]:
    """What a command must leave as it found it: the SIGINT handler, logging's handlers and levels, the working
    directory."""
    root, library = logging.getLogger(), logging.getLogger("pykafka_client")
    return (signal.getsignal(signal.SIGINT), list(root.handlers), root.level, list(library.handlers), library.level,
            os.getcwd())


def run_in_process(entry: Callable[[Sequence[str]], int], argv: Sequence[str], *, input: bytes | None = None,
                   bootstrap_env: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """``entry(argv)`` (a CLI's ``main``) as its process would run it, with ``input`` on stdin,
    $PYKAFKA_BOOTSTRAP_SERVERS set to ``bootstrap_env`` and the repository as the working directory: the
    CompletedProcess has its stdout and stderr bytes and its exit code. A run longer than ``timeout`` seconds
    raises subprocess.TimeoutExpired when it ends, as ``subprocess.run(timeout=...)`` would have (a hang is cut
    by the test's own timeout). Fails when the command left a client thread running, a client socket
    unclosed, or the process's signal or logging set-up changed."""
    started = time.monotonic()
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    stdout = io.TextIOWrapper(_KeptBytes(), encoding="utf-8")
    stderr = io.TextIOWrapper(_KeptBytes(), encoding="utf-8", errors="backslashreplace")
    threads_before = _client_threads()
    state_before = _process_state()
    previous_env = os.environ.get(BOOTSTRAP_ENV)
    previous_cwd = os.getcwd()
    with _client_sockets(threads_before) as sockets:
        try:
            os.environ[BOOTSTRAP_ENV] = bootstrap_env
            os.chdir(ROOT)
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                saved_stdin, sys.stdin = sys.stdin, stdin
                try:
                    code = _exit_code(entry(list(argv)), stderr)
                except SystemExit as e:
                    code = _exit_code(e.code, stderr)
                except KeyboardInterrupt:
                    raise
                except BaseException:  # what the interpreter does with an uncaught error
                    traceback.print_exc(file=stderr)
                    code = 1
                finally:
                    sys.stdin = saved_stdin
            for stream in (stdout, stderr):
                with contextlib.suppress(ValueError):  # a closed stream has nothing left to flush
                    stream.flush()
        finally:
            os.chdir(previous_cwd)
            if previous_env is None:
                os.environ.pop(BOOTSTRAP_ENV, None)
            else:
                os.environ[BOOTSTRAP_ENV] = previous_env
    if time.monotonic() - started > timeout:
        raise subprocess.TimeoutExpired(list(argv), timeout)
    assert isinstance(stdout.buffer, _KeptBytes) and isinstance(stderr.buffer, _KeptBytes)
    done = subprocess.CompletedProcess(list(argv), code, stdout.buffer.getvalue(), stderr.buffer.getvalue())
    leaked = [t.name for t in _client_threads() - threads_before if not _ends(t)]
    assert not leaked, f"{list(argv)} left client threads running: {leaked} ({done.stderr!r})"
    unclosed = [repr(s) for s in sockets if s.fileno() != -1]
    for s in sockets:
        s.close()
    assert not unclosed, f"{list(argv)} left sockets unclosed: {unclosed}"
    assert _process_state() == state_before, f"{list(argv)} changed the process's signal or logging set-up"
    return done


def _ends(thread: threading.Thread) -> bool:
    """Whether ``thread`` ends within a moment (a closed client's thread may still be on its way out)."""
    thread.join(5)
    return not thread.is_alive()


def runner(broker: MiniBroker) -> Run:
    """``run("topics", "list", input=b"...")`` -> CompletedProcess with bytes stdout/stderr: ``pykafka ...``
    against ``broker``, in this process (:func:`run_in_process`)."""
    return bootstrap_runner(broker.bootstrap_servers)


def bootstrap_runner(bootstrap_env: str) -> Run:
    """As :func:`runner`, with $PYKAFKA_BOOTSTRAP_SERVERS set to ``bootstrap_env``."""

    def run(*args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        return run_in_process(pykafka_main, args, input=input, bootstrap_env=bootstrap_env, timeout=timeout)

    return run


def run_script(script: str, args: Sequence[str], *, input: str | None = None, bootstrap_env: str,
               timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """``bin/<script> args...`` (a Kafka script such as ``kafka-topics.sh``) in this process: what its shim
    runs, ``python -m pykafka_client.cli.kafka_scripts <script> args...``, with text output."""
    done = run_in_process(dispatch.main, [script, *args], input=None if input is None else input.encode(),
                          bootstrap_env=bootstrap_env, timeout=timeout)
    return subprocess.CompletedProcess([script, *args], done.returncode, _text(done.stdout), _text(done.stderr))


def _text(data: bytes) -> str:
    """Bytes as ``subprocess.run(text=True)`` reads them (universal newlines)."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@pytest.fixture(scope="module")
def pykafka(broker: MiniBroker) -> Run:
    """``pykafka("topics", "list", input=b"...")`` -> CompletedProcess with bytes stdout/stderr."""
    return runner(broker)


def one_error_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The failure's single stderr line (asserts there is exactly one and no traceback)."""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, result.stderr.decode()
    assert "Traceback" not in lines[0]
    return lines[0]
