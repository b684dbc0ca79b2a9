"""The produce request of the drained batches built by the kernel (``_kernel.drained_request``) == the reference
loop (``Sender._drained_request``): for random batches (partitions, records, producer ids, epochs, sequences,
transactional or not, bytes already built for an older or the current producer state, records kept as the kernel's
``PendingRecords`` or as the reference's list), the same frame bytes at every version, the same batches by
partition, record count and size, and every batch left in the same state (its cached bytes, their state, the sent
stamp, the compression ratio). A compressed batch, or records the kernel's encoder declines, leave it to the
reference (None)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.request_encoding import encode_request_frame
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.sender import DrainedProduceRequest, Sender
from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.crc import crc32c
from pykafka_client.structs import TopicPartition
from tests.doubles.frames import frame_bytes

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

_STATE = ("encoded", "encoded_state", "sent_stamp", "actual_compression_ratio", "producer_id", "producer_epoch",
          "base_sequence", "is_transactional")

_record = st.tuples(
    st.integers(0, 2**40), st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=300))
)
_batch = st.fixed_dictionaries({
    "tp": st.tuples(st.sampled_from(["t", "other", "é"]), st.integers(0, 5)),
    "records": st.lists(_record, min_size=1, max_size=12),
    "state": st.tuples(st.sampled_from([-1, 0, 7, 2**40]), st.sampled_from([-1, 0, 3, 32767]),
                       st.sampled_from([-1, 0, 5, 2**31 - 1]), st.booleans()),
    # 0: never built; 1: built for an older state, then re-stamped; 2: built for the current state
    "built": st.sampled_from([0, 1, 2]),
    "native_pending": st.booleans(),
})


def _make(spec: dict[str, Any]) -> ProducerBatch:
    previous = _native.use_native(spec["native_pending"])  # PendingRecords with the kernel, a list without
    try:
        b = ProducerBatch(TopicPartition(*spec["tp"]), 1 << 20, 1000)
        for ts, key, value in spec["records"]:
            assert b.try_append(ts, key, value, (), None, 1000) is not None
    finally:
        _native.use_native(previous)
    pid, epoch, seq, txn = spec["state"]
    if spec["built"] == 1:
        b.set_producer_state(pid + 1, epoch, seq, txn)
        b.records()
    b.set_producer_state(pid, epoch, seq, txn)
    if spec["built"] == 2:
        b.records()
    return b


def _unique(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[str, int]] = set()
    return [s for s in specs if not (s["tp"] in seen or seen.add(s["tp"]))]  # type: ignore[func-returns-value]


def _reference(batches: list[ProducerBatch], tid: str | None) -> tuple[Any, dict[Any, Any], int, int]:
    sender = SimpleNamespace(acks=-1, request_timeout_ms=30000, accumulator=SimpleNamespace(update_compression_ratio=None))
    return Sender._drained_request(sender, batches, tid)  # type: ignore[arg-type]


def _frames(body: DrainedProduceRequest) -> list[bytes]:
    return [frame_bytes(encode_request_frame(body, v, 9, "c")) for v in (3, 8, 9, 11)]


@settings(max_examples=200, deadline=None)
@given(st.lists(_batch, min_size=1, max_size=6).map(_unique), st.one_of(st.none(), st.text(max_size=8)))
def test_the_kernel_drains_as_the_reference(specs: list[dict[str, Any]], tid: str | None) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    compiled_batches = [_make(s) for s in specs]
    reference_batches = [_make(s) for s in specs]
    out = kernel.drained_request(compiled_batches, crc32c, tid, -1, 30000)
    assert out is not None
    body, by_tp, records, size = out
    ref_body, ref_by_tp, ref_records, ref_size = _reference(reference_batches, tid)
    assert type(body) is DrainedProduceRequest and body.parts is not None
    assert (records, size) == (ref_records, ref_size)
    assert list(by_tp) == list(ref_by_tp) and list(by_tp.values()) == compiled_batches
    assert _frames(body) == _frames(ref_body)
    for c, r in zip(compiled_batches, reference_batches, strict=True):
        assert [getattr(c, a) for a in _STATE] == [getattr(r, a) for a in _STATE]
    assert body == ref_body  # (topic_data built from the parts on both)


def test_a_batch_built_for_the_current_state_is_not_encoded_again() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    b = _make({"tp": ("t", 0), "records": [(1, None, b"v")], "state": (4, 0, 0, False), "built": 2, "native_pending": True})
    built = b.records()
    out = kernel.drained_request([b], crc32c, None, 1, 1000)
    assert out is not None
    assert out[0].parts[0][1] is built and b.sent_stamp == (4, 0, 0)


def test_the_kernel_leaves_compressed_batches_and_unencodable_records_to_the_reference() -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    plain = _make({"tp": ("t", 0), "records": [(1, None, b"v")], "state": (-1, -1, -1, False), "built": 0,
                   "native_pending": True})
    compressed = ProducerBatch(TopicPartition("t", 1), 1 << 20, 1000, CompressionType.GZIP)
    assert compressed.try_append(1, None, b"v", (), None, 1000) is not None
    assert kernel.drained_request([plain, compressed], crc32c, None, 1, 1000) is None
    odd = ProducerBatch(TopicPartition("t", 2), 1 << 20, 1000)  # no record: the kernel's encode_batch declines it
    assert kernel.drained_request([odd], crc32c, None, 1, 1000) is None
    assert odd.sent_stamp is None
    _, by_tp, records, size = _reference([odd], None)
    assert by_tp == {odd.topic_partition: odd} and records == 0 and size == 61
    cached = _make({"tp": ("t", 3), "records": [(1, None, b"v")], "state": (-1, -1, -1, False), "built": 2,
                    "native_pending": True})
    # cached bytes of another type: the reference takes them as they are
    cached.encoded = bytearray(cached.records())  # type: ignore[assignment]  # (the other type, on purpose)
    assert kernel.drained_request([cached], crc32c, None, 1, 1000) is None


_header = st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=30)))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**41), st.one_of(st.none(), st.binary(max_size=300)),
                       st.one_of(st.none(), st.binary(max_size=3000)), st.lists(_header, max_size=3)),
             min_size=1, max_size=60),
    st.sampled_from([200, 1000, 16384]),
    st.tuples(st.sampled_from([-1, 5, 2**40]), st.sampled_from([-1, 3]), st.sampled_from([-1, 0, 2**31 - 1]),
              st.booleans()),
    st.booleans(),
)
def test_an_uncompressed_batch_is_as_large_as_its_size_bytes(
    records: list[Any], limit: int, state: tuple[int, int, int, bool], native: bool
) -> None:
    """The drain takes an uncompressed batch's size_bytes as its size (estimated_size_in_bytes without the call):
    its encoded bytes are exactly that long, before and after they are built, whatever its producer state."""
    previous = _native.use_native(native)
    try:
        b = ProducerBatch(TopicPartition("t", 0), limit, 1000)
        for ts, key, value, headers in records:
            if b.try_append(ts, key, value, headers, None, 1000) is None:
                break
        assert b.estimated_size_in_bytes() == b.size_bytes
        b.set_producer_state(*state)
        assert len(b.records()) == b.size_bytes == b.estimated_size_in_bytes()
    finally:
        _native.use_native(previous)
