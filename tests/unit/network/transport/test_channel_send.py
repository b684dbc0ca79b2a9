"""KafkaChannel.write_new_send: a request frame of bytes pieces goes out in one gathering write of the pieces as
they are; a partial write resumes where the transport stopped; anything else takes the general SendWriter path."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalArgumentError, IllegalStateError
from pykafka_client.network.transport.channel import KafkaChannel
from pykafka_client.network.transport.selectable import Buffer, NetworkSend
from pykafka_client.protocol.types import FileRegion


class _Socket:
    def fileno(self) -> int:
        return 99


class _Transport:
    """A plaintext-like transport that takes at most ``limits[i]`` bytes at its i-th write (all after them)."""

    def __init__(self, limits: Sequence[int] = ()) -> None:
        self.socket = _Socket()
        self.limits = list(limits)
        self.out = bytearray()
        self.writes: list[list[type]] = []  # the piece types handed to each write_buffers call

    def ready(self) -> bool:
        return True

    def write_buffers(self, views: Sequence[Buffer]) -> int:
        self.writes.append([type(v) for v in views])
        budget = self.limits.pop(0) if self.limits else 1 << 30
        n = 0
        for v in views:
            take = min(len(v), budget - n)
            self.out += bytes(v[:take])
            n += take
            if n >= budget:
                break
        return n

    def transfer_file(self, fd: int, offset: int, count: int) -> int:
        data = os.pread(fd, count, offset)
        self.out += data
        self.writes.append([FileRegion])
        return len(data)


def _channel(transport: _Transport) -> KafkaChannel:
    return KafkaChannel("n1", transport)  # type: ignore[arg-type]  # the duck-typed transport above


def _send(pieces: list[bytes | bytearray]) -> NetworkSend:
    return NetworkSend("n1", pieces, sum(len(p) for p in pieces))


def test_bytes_pieces_go_out_in_one_write_of_the_pieces_as_they_are() -> None:
    t = _Transport()
    ch = _channel(t)
    send = _send([bytearray(b"\x00\x00\x00\x05hd"), b"abc"])
    assert ch.write_new_send(send) is send
    assert t.writes == [[bytearray, bytes]]  # no memoryview per piece, no second write
    assert bytes(t.out) == b"\x00\x00\x00\x05hdabc"
    assert send.written == send.size and not ch.has_send() and ch.bytes_sent == send.size


def test_a_single_bytes_piece_goes_out_as_it_is() -> None:
    # (the broker's produce responses: one piece)
    t = _Transport()
    ch = _channel(t)
    send = _send([b"\x00\x00\x00\x03abc"])
    assert ch.write_new_send(send) is send
    assert t.writes == [[bytes]] and bytes(t.out) == b"\x00\x00\x00\x03abc"
    assert send.written == send.size and not ch.has_send() and ch.bytes_sent == send.size


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=6),
    limits=st.lists(st.integers(min_value=0, max_value=50), max_size=8),
)
def test_a_partial_write_resumes_where_the_transport_stopped(pieces: list[bytes], limits: list[int]) -> None:
    # the same bytes, in order, whatever the transport takes at each write: as the general path writes them
    t = _Transport(limits)
    ch = _channel(t)
    send = _send(list[bytes | bytearray](pieces))
    done = ch.write_new_send(send)
    for _ in range(len(limits) + 2):
        if done is not None:
            break
        done = ch.write()
    assert done is send
    assert bytes(t.out) == b"".join(pieces)
    assert send.written == send.size == ch.bytes_sent


def test_a_size_that_does_not_match_the_pieces_fails_before_any_byte_goes_out() -> None:
    t = _Transport()
    ch = _channel(t)
    with pytest.raises(IllegalArgumentError, match="declares size 9"):
        ch.write_new_send(NetworkSend("n1", [b"abcd", b"efgh"], 9))
    assert t.writes == [] and not ch.has_send()


def test_a_send_in_progress_is_not_replaced() -> None:
    ch = _channel(_Transport([1]))
    assert ch.write_new_send(_send([b"ab", b"cd"])) is None
    with pytest.raises(IllegalStateError, match="prior send"):
        ch.write_new_send(_send([b"x", b"y"]))


def test_a_file_region_takes_the_general_path() -> None:
    with tempfile.TemporaryFile() as f:
        f.write(b"0123456789")
        f.flush()
        t = _Transport()
        ch = _channel(t)
        region = FileRegion(f, 2, 5)
        send = NetworkSend("n1", [b"\x00\x00\x00\x05", region], 9)
        assert ch.write_new_send(send) is send
        assert bytes(t.out) == b"\x00\x00\x00\x0523456"
        assert t.writes[0] == [memoryview]  # the general path: the bytes piece as a view, then the region
