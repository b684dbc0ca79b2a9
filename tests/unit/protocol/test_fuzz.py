"""Hostile bytes into every decoder: only KafkaError subclasses (MessageDecodeError,
UnsupportedVersionError, ...) may come out; never IndexError/struct.error/MemoryError/ValueError."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykafka_client.errors import KafkaError, MessageDecodeError
from pykafka_client.protocol.headers import decode_request, decode_response
from pykafka_client.protocol.messages import MESSAGE_CLASSES, FetchResponse, ProduceRequest
from pykafka_client.protocol.types import Message, Reader

from .strategies import message_at

NAMES = sorted(MESSAGE_CLASSES)


def sample_versions(cls: type[Message]) -> list[int]:
    lo, hi = cls.VALID_VERSIONS
    vs = {lo, hi, (lo + hi) // 2}
    if cls.FLEXIBLE_VERSIONS_MIN is not None and lo <= cls.FLEXIBLE_VERSIONS_MIN <= hi:
        vs.add(cls.FLEXIBLE_VERSIONS_MIN)
        if cls.FLEXIBLE_VERSIONS_MIN > lo:
            vs.add(cls.FLEXIBLE_VERSIONS_MIN - 1)
    return sorted(vs)


def try_decode(cls: type[Message], data: bytes, version: int) -> None:
    try:
        cls.decode(data, version)
    except KafkaError:
        pass


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_truncations_and_mutations(name: str, data: st.DataObject) -> None:
    cls = MESSAGE_CLASSES[name]
    rnd = random.Random(name)
    for v in sample_versions(cls):
        obj = data.draw(message_at(cls, v), label=f"v{v}")
        enc = obj.encode(v)
        cuts = range(len(enc)) if len(enc) <= 128 else sorted(rnd.sample(range(len(enc)), 128))
        for n in cuts:
            try_decode(cls, enc[:n], v)
        positions = range(len(enc)) if len(enc) <= 96 else rnd.sample(range(len(enc)), 96)
        for i in positions:
            for b in (0x00, 0xFF, 0x7F, 0x80, enc[i] ^ 0x01):
                mutated = enc[:i] + bytes([b]) + enc[i + 1 :]
                try_decode(cls, mutated, v)
        try_decode(cls, enc + b"\x00", v)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(blob=st.binary(max_size=64), version_pick=st.integers(0, 1000))
def test_random_bytes(name: str, blob: bytes, version_pick: int) -> None:
    cls = MESSAGE_CLASSES[name]
    lo, hi = cls.VALID_VERSIONS
    try_decode(cls, blob, lo + version_pick % (hi - lo + 1))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(blob=st.binary(max_size=64))
def test_random_frames_into_header_decoders(blob: bytes) -> None:
    try:
        decode_request(blob)
    except KafkaError:
        pass
    for key, version in ((3, 12), (1, 16), (18, 3), (0, 9)):
        try:
            decode_response(blob, key, version, 0)
        except KafkaError:
            pass


def test_lying_length_claiming_2gb_fails_fast() -> None:
    # ProduceRequest v3: transactional_id (null), acks, timeout, topic array count = 2 G on a 22-byte buffer
    data = b"\xff\xff" + struct.pack(">hi", -1, 1000) + struct.pack(">i", 2_000_000_000) + b"\x00" * 10
    assert len(data) == 22
    tracemalloc.start()
    try:
        with pytest.raises(MessageDecodeError, match="array count 2000000000"):
            ProduceRequest.decode(data, 3)
        with pytest.raises(MessageDecodeError, match="bytes length 2147483000 exceeds 16 remaining"):
            Reader(struct.pack(">i", 2_147_483_000) + b"\x00" * 16).read_bytes()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # nothing was sized by the lying length
    # a records length of 2 GB inside a Fetch response partition
    part = struct.pack(">ihq", 0, 0, 0) + struct.pack(">i", 2_147_483_000)
    data = struct.pack(">ii", 0, 1) + b"\x00\x01t" + struct.pack(">i", 1) + part + b"\x00" * 4
    with pytest.raises(MessageDecodeError, match="records length 2147483000 exceeds"):
        FetchResponse.decode(data, 1)


def test_compact_array_count_larger_than_buffer_fails_fast() -> None:
    # flexible FetchResponse v12: throttle, error, session, then a compact array claiming 2**28 topics
    data = struct.pack(">ihi", 0, 0, 0) + b"\x80\x80\x80\x80\x01" + b"\x00" * 5
    with pytest.raises(MessageDecodeError, match="compact array count"):
        FetchResponse.decode(data, 12)
