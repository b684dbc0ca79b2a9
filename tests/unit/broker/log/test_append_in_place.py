"""Log.append rewrites the batch headers in the caller's buffer only when it is a writable byte memoryview (a request
frame's records); every other input is copied and left as it was. The log's files hold the same bytes either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.log import Log, LogConfig
from pykafka_client.utils.time import MockTime

from .helpers import batch, values_of


def _open(path: Path) -> Log:
    return Log(str(path / "topic-0"), LogConfig.from_props({}), time=MockTime(), had_clean_shutdown=True)


def _log_bytes(lg: Log) -> bytes:
    lg.flush()
    with open(lg.active_segment.log_path, "rb") as f:
        return f.read()


def _inputs() -> list[bytes]:
    return [batch([b"a", b"b"]), batch([b"c"]) + batch([b"d", b"e", b"f"]), batch([b"g"])]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "readonly view", "writable view"])
def test_the_log_files_are_the_same_whatever_the_buffer(tmp_path: Path, kind: str) -> None:
    reference = _open(tmp_path / "ref")
    lg = _open(tmp_path / kind)
    for data in _inputs():
        reference.append(data)
        frame = bytearray(b"\x00" * 7 + data)  # the records inside a bigger frame, as a request's are
        given: dict[str, bytes | bytearray | memoryview] = {
            "bytes": data, "bytearray": bytearray(data), "readonly view": memoryview(bytes(frame))[7:],
            "writable view": memoryview(frame)[7:]}
        lg.append(given[kind])
    assert _log_bytes(lg) == _log_bytes(reference)
    assert values_of(_log_bytes(lg)) == [(i, v) for i, v in enumerate([b"a", b"b", b"c", b"d", b"e", b"f", b"g"])]
    reference.close()
    lg.close()


def test_only_a_writable_view_is_rewritten(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    lg.append(batch([b"x"] * 5))  # the next append gets base offset 5
    data = batch([b"y"])
    as_bytes, as_bytearray = data, bytearray(data)
    frame = bytearray(b"\x00" * 3 + data)
    lg.append(as_bytes)
    lg.append(as_bytearray)
    lg.append(memoryview(frame)[3:])
    assert as_bytes == data and as_bytearray == data  # copied, not touched
    # the view's batch got its base offset (7) in place: the bytes written are the frame's
    assert int.from_bytes(frame[3:11], "big") == 7 and bytes(frame[3:]) == _log_bytes(lg)[-len(data):]
    assert frame[:3] == b"\x00" * 3
    lg.close()
