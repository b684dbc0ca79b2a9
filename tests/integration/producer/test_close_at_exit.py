"""A producer the program forgets to close is flushed and closed at interpreter exit (issue 9 item 7).

Each test runs a small program in a subprocess that produces without calling ``close()`` or ``flush()``
and simply ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer
from pykafka_client.structs import TopicPartition

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def _run(program: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


def test_records_of_a_producer_never_closed_are_delivered_at_exit() -> None:
    records = 500
    with MiniBroker({"num.partitions": 2}) as broker:
        # linger.ms far beyond the program's life: without the exit hook every record is still buffered
        # when the interpreter ends (and the daemon I/O thread dies with it).
        program = f"""
            from pykafka_client import KafkaProducer
            producer = KafkaProducer({{"bootstrap.servers": {broker.bootstrap_servers!r}, "linger.ms": 60000}})
            for i in range({records}):
                producer.send("at-exit", f"record {{i}}".encode(), key=str(i).encode())
            print("sent", flush=True)
        """
        done = _run(program, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "sent" in done.stdout

        seen: set[str] = set()
        config = {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}
        with KafkaConsumer(config) as consumer:
            consumer.assign([TopicPartition("at-exit", 0), TopicPartition("at-exit", 1)])
            deadline = time.monotonic() + 20
            while len(seen) < records and time.monotonic() < deadline:
                for r in consumer.poll(0.5):
                    seen.add(r.value.decode())
        assert seen == {f"record {i}" for i in range(records)}


@pytest.mark.parametrize("logging_configured", [True, False], ids=["logging", "no-logging"])
def test_exit_is_bounded_and_warns_with_the_pending_count_when_the_broker_is_gone(logging_configured: bool) -> None:
    """The warning reaches stderr whether or not the program configured logging (the library's logger
    has only a NullHandler, which would otherwise swallow a data-loss warning)."""
    setup = "logging.basicConfig(level=logging.WARNING)" if logging_configured else "pass"
    program = f"""
        import logging, time
        from mini_broker.broker import MiniBroker
        from pykafka_client import KafkaProducer
        {setup}
        with MiniBroker() as broker:
            # rebootstrap (the default) would replace the cached metadata with the bare bootstrap node once
            # the broker is gone, and each send() below would then block max.block.ms for the partitions.
            producer = KafkaProducer(
                {{"bootstrap.servers": broker.bootstrap_servers, "metadata.recovery.strategy": "none"}}
            )
            producer.close_at_exit_timeout = 1.5
            producer.send("gone", b"first").result(timeout=10)  # metadata known; then the broker stops
        time.sleep(0.5)  # let the I/O thread see the broker go and fail to reconnect before the sends
        for i in range(37):
            producer.send("gone", b"x%d" % i)
        print("exiting", flush=True)
        print(time.monotonic(), flush=True)
    """
    done = _run(program, timeout=60)
    ended = time.monotonic()
    assert done.returncode == 0, done.stderr
    exiting_at = float(done.stdout.split()[-1])
    assert ended - exiting_at < 1.5 + 3.0, f"exit took {ended - exiting_at:.1f} s"
    assert "37 record(s) were still not delivered after 1.5 s" in done.stderr
    assert "Call flush() or close()" in done.stderr
