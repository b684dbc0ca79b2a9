"""mini_broker owns its data directory (issue 9 item 2).

A second broker on a directory already in use (another process, or another MiniBroker in this process)
fails at once with an error naming the directory and writes nothing there, while the first keeps serving
and loses nothing. A broker that fails to start writes no clean-shutdown marker; a brand-new directory is
not reported as an unclean shutdown.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.log.data_dir_lock import LOCK_FILE, DataDirInUseError
from pykafka_client.errors import ConfigurationError
from tests.integration.broker.broker_process import ROOT, BrokerProcess, ck, consume_all, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime: what a second broker must leave alone."""
    out: dict[str, tuple[int, int]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    errors: list[object] = []
    for v in values:
        p.produce(topic, value=v, on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(15) == 0
    assert errors == []


def test_second_broker_process_on_the_same_dir_exits_at_once_and_the_first_loses_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = BrokerProcess(data_dir)
    try:
        create_topic(first.bootstrap, "owned")
        produce(first.bootstrap, "owned", [b"before-%d" % i for i in range(50)])
        before = tree(data_dir)

        second = subprocess.Popen(
            [sys.executable, "-m", "mini_broker", "--data-dir", str(data_dir), "--listeners",
             "PLAINTEXT://127.0.0.1:0", "--log-level", "WARNING"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
        try:
            out, err = second.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()
            out, err = second.communicate()
            pytest.fail(f"the second broker kept running on a directory in use:\n{out}{err}")
        assert second.returncode != 0
        assert str(data_dir) in err, err
        assert "in use" in err, err
        assert "listening on" not in out
        # the second broker wrote nothing: no new file, and every file other than the first broker's own
        # segment files (which it may still touch) is byte-for-byte as it was
        after = tree(data_dir)
        assert set(after) == set(before), (before, after)
        for name, (size, mtime) in before.items():
            if name.endswith((".log", ".index", ".timeindex")):
                continue  # the first broker itself may still touch its active segment
            assert after[name] == (size, mtime), name

        produce(first.bootstrap, "owned", [b"after-%d" % i for i in range(50)])
        assert first.terminate() == 0
    finally:
        first.ensure_dead()

    restarted = BrokerProcess(data_dir)
    try:
        records = consume_all(restarted.bootstrap, "owned")
        assert [v for _, v in records] == [b"before-%d" % i for i in range(50)] + [b"after-%d" % i for i in range(50)]
        assert restarted.terminate() == 0
    finally:
        restarted.ensure_dead()


def test_second_in_process_broker_on_the_same_dir_raises_a_clear_error(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MiniBroker(data_dir=str(data_dir)) as first:
        before = tree(data_dir)
        second = MiniBroker(data_dir=str(data_dir))
        with pytest.raises(DataDirInUseError) as info:
            second.start()
        assert str(data_dir) in str(info.value)
        assert "another broker" in str(info.value)
        assert tree(data_dir) == before
        assert first.port > 0  # still serving
    # released on shutdown: the next broker gets it
    with MiniBroker(data_dir=str(data_dir)) as again:
        assert again.port > 0
    assert (data_dir / LOCK_FILE).exists()


def test_failed_start_on_a_taken_port_writes_no_clean_shutdown_marker(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MiniBroker(data_dir=str(data_dir)) as b:
        assert b.replica_manager is not None
        b.replica_manager.create_topic("t", 1, {})
    assert (data_dir / CLEAN_SHUTDOWN_MARKER).exists()
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        broker = MiniBroker(data_dir=str(data_dir), listeners=f"PLAINTEXT://127.0.0.1:{port}")
        with pytest.raises(OSError):
            broker.start()
    finally:
        taken.close()
    assert not (data_dir / CLEAN_SHUTDOWN_MARKER).exists()
    # and the lock was released: a real start works
    with MiniBroker(data_dir=str(data_dir)) as b:
        assert b.port > 0


def test_bad_config_writes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with pytest.raises(ConfigurationError, match=r"num\.partitions"):
        MiniBroker(data_dir=str(data_dir), num_partitions="zero").start()
    assert not data_dir.exists() or not any(data_dir.iterdir())


def test_brand_new_directory_is_not_logged_as_an_unclean_shutdown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "fresh"
    with caplog.at_level(logging.INFO, logger="mini_broker"):
        with MiniBroker(data_dir=str(data_dir)):
            pass
    texts = [str(r.msg).lower() for r in caplog.records]
    assert not [t for t in texts if "clean shutdown" in t or "unclean" in t or "recover" in t], texts


def test_cli_start_on_a_brand_new_directory_says_nothing_of_an_unclean_shutdown(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh"
    broker = BrokerProcess(data_dir, log_level="INFO")
    try:
        assert broker.terminate() == 0
    finally:
        broker.ensure_dead()
    text = "".join(broker.output).lower()
    assert "clean shutdown" not in text and "unclean" not in text, text
    assert os.path.exists(data_dir / CLEAN_SHUTDOWN_MARKER)
