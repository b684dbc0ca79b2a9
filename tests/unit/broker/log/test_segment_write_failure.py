"""A segment write cut short by an error (the file size limit here; ENOSPC or EIO part-way through a batch alike)
leaves no bytes of the batch behind, on the compiled log end and on the Python reference (this directory's
conftest runs each test on both): the append raises, the
segment file, the log end offset and the producer's state are as before it, and the next append (the producer's
retry of the same batch) lands right after the last whole batch, readable, and after a restart too.

The limit is set with RLIMIT_FSIZE (SIGXFSZ ignored): a write that crosses it writes up to the limit and the next
write fails with EFBIG, a short write followed by an error, deterministically."""

from __future__ import annotations

import errno
import os
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mini_broker.log import Log, LogConfig
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime

from .helpers import values_of

NOW = 1_700_000_000_000


def idempotent_batch(seq: int, n: int, value_size: int) -> bytes:
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        assert b.try_append(NOW + i, None, b"%04d" % (seq + i) + b"v" * value_size, [], None, 0) is not None
    b.set_producer_state(7, 0, seq, False)
    return b.records()


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous_handler)


def segment_file(lg: Log) -> str:
    (name,) = [n for n in os.listdir(lg.dir_path) if n.endswith(".log")]
    return os.path.join(lg.dir_path, name)


def test_a_write_cut_short_leaves_no_bytes_and_the_retry_lands_after_the_last_whole_batch(tmp_path: Path) -> None:
    time = MockTime(current_time_ms=NOW)
    lg = Log(str(tmp_path / "t-0"), LogConfig(), time=time)
    first = idempotent_batch(0, 2, 10)
    assert lg.append(memoryview(bytearray(first)), raise_high_watermark=True).first_offset == 0
    path = segment_file(lg)
    size = os.path.getsize(path)
    second = idempotent_batch(2, 3, 3000)
    with file_size_limit(size + len(second) // 2), pytest.raises(OSError) as raised:
        lg.append(memoryview(bytearray(second)), raise_high_watermark=True)
    assert raised.value.errno == errno.EFBIG
    assert os.path.getsize(path) == size  # the part written is gone
    assert lg.log_end_offset == 2
    # the producer's retry of the same batch (same sequence) is appended, not a duplicate or a gap
    info = lg.append(memoryview(bytearray(second)), raise_high_watermark=True)
    assert (info.first_offset, info.last_offset) == (2, 4)
    assert os.path.getsize(path) == size + len(second)
    expected = [(i, b"%04d" % i + b"v" * (10 if i < 2 else 3000)) for i in range(5)]
    with open(path, "rb") as f:
        assert values_of(f.read()) == expected
    lg.close()
    reopened = Log(str(tmp_path / "t-0"), LogConfig(), time=time)
    assert reopened.log_end_offset == 5
    reopened.close()
