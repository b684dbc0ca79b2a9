"""conftest.run_in_process, which the CLI tests run every command through, reports what a process would: the
bytes written to stdout and stderr, the exit code returned or exited with (a traceback and 1 for an uncaught
error); and it fails a command that leaves a client running, a socket unclosed or a signal handler changed,
which a process's exit would have hidden."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable, Sequence

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer
from tests.integration.cli.conftest import run_in_process

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _run(entry: Callable[[Sequence[str]], int], input: bytes | None = None) -> tuple[int, bytes, bytes]:
    done = run_in_process(entry, ["a", "b"], input=input, bootstrap_env="unused:1")
    return done.returncode, done.stdout, done.stderr


def test_output_exit_codes_and_uncaught_errors_are_the_processs() -> None:
    def echo(argv: Sequence[str]) -> int:
        sys.stdout.write(sys.stdin.read().upper() + " ".join(argv))
        sys.stdout.flush()
        sys.stdout.buffer.write(b"\xff")
        print("é", file=sys.stderr)
        return 3

    assert _run(echo, input=b"in\n") == (3, b"IN\na b\xff", "é\n".encode())

    def exits(argv: Sequence[str]) -> int:
        sys.exit("gone")

    assert _run(exits) == (1, b"", b"gone\n")

    def fails(argv: Sequence[str]) -> int:
        raise RuntimeError("boom")

    code, out, err = _run(fails)
    assert (code, out) == (1, b"") and err.startswith(b"Traceback") and err.endswith(b"RuntimeError: boom\n")


def test_a_client_left_open_fails_the_run(broker: MiniBroker) -> None:
    producer: list[KafkaProducer] = []

    def leaves_a_producer(argv: Sequence[str]) -> int:
        producer.append(KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}))
        return 0

    try:
        with pytest.raises(AssertionError, match="left client threads running"):
            _run(leaves_a_producer)
    finally:
        producer[0].close()


def test_an_unclosed_socket_or_a_changed_signal_handler_fails_the_run() -> None:
    def leaves_a_socket(argv: Sequence[str]) -> int:
        socket.socket()
        return 0

    with pytest.raises(AssertionError, match="unclosed"):
        _run(leaves_a_socket)

    previous = signal.getsignal(signal.SIGINT)

    def keeps_its_handler(argv: Sequence[str]) -> int:
        # a handler of its own: SIG_IGN may be what a test run started in the background already has
        signal.signal(signal.SIGINT, lambda signum, frame: None)
        return 0

    try:
        with pytest.raises(AssertionError, match="signal or logging"):
            _run(keeps_its_handler)
    finally:
        signal.signal(signal.SIGINT, previous)
