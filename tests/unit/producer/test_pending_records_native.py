"""The kernel's ``PendingRecords`` (``ProducerBatch.pending`` with the compiled kernel: each record encoded into the
batch's records section at its append, Java ``MemoryRecordsBuilder``) == the reference's list of record tuples:
the same records read back, the same per-record columns and callbacks, and byte-identical batches whatever the
producer state (a re-stamp after an epoch bump), codec, split or appending path (``send``, ``send_batch``, the
Python fallback); a record the encoding cannot take as the reference would turns it into a list for good."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer import batch_append
from pykafka_client.producer.batch_encoder import encode_batch, encode_batch_reference
from pykafka_client.producer.producer_batch import ProducerBatch, pending_columns_reference
from pykafka_client.producer.record_metadata import RecordMetadata
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.structs import TopicPartition
from tests.unit.producer.helpers import EncodableRecords as _Batch

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

TP = TopicPartition("t", 0)


def _kernel() -> Any:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    return kernel


@pytest.fixture(autouse=True)
def _native_on() -> Iterator[None]:
    previous = _native.use_native(True)
    try:
        yield
    finally:
        _native.use_native(previous)


def _reference_batch(limit: int) -> ProducerBatch:
    """A ProducerBatch of the pure-Python reference (its pending a list of tuples)."""
    previous = _native.use_native(False)
    try:
        return ProducerBatch(TP, limit, 0)
    finally:
        _native.use_native(previous)


def _cb_a(md: RecordMetadata | None, err: BaseException | None) -> None:
    return None


def _cb_b(md: RecordMetadata | None, err: BaseException | None) -> None:
    return None


_bytes = st.one_of(st.none(), st.binary(max_size=200))
_headers = st.one_of(
    st.just(()), st.just(None),
    st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=10))), min_size=1, max_size=3),
)
_plain = st.tuples(st.integers(0, 2**45), _bytes, _bytes, _headers, st.sampled_from([None, None, _cb_a, _cb_b]))
# what the encoding must leave as tuples (the reference decides at drain: encodes, or raises)
_ODD: list[Any] = [
    (-1, None, b"v", (), None), (True, None, b"v", (), None), (2**63, None, b"v", (), None),
    (5, None, bytearray(b"v"), (), None), (5, "str", b"v", (), None), (5, None, b"v", [("\ud800", b"x")], None),
    (5, None, b"v", [(b"not str", b"x")], None),
]
_odd = st.sampled_from(_ODD)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as e:  # the same error either way
        return type(e)


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(st.one_of(_plain, _plain, _plain, _plain, _plain, _plain, _plain, _odd), min_size=1, max_size=30),
    stamps=st.lists(
        st.tuples(st.integers(-1, 2**40), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1), st.booleans()),
        min_size=1, max_size=3,
    ),
    with_ts=st.booleans(),
)
def test_pending_records_read_columns_and_encode_as_the_reference_list(
    records: list[Any], stamps: list[tuple[int, int, int, bool]], with_ts: bool
) -> None:
    pending = _kernel().PendingRecords()
    ref: list[Any] = []
    for rec in records:
        pending.append(rec)
        ref.append(rec)
    assert len(pending) == len(ref)
    assert pending.is_encoded() == (not any(r is o for r in records for o in _ODD))
    for got, want in zip(pending, ref, strict=True):
        assert got[:3] == want[:3] and got[4] is want[4]
        assert list(got[3] or ()) == list(want[3] or ())
    assert pending[-1][:3] == ref[-1][:3] and [r[:3] for r in pending[1:3]] == [r[:3] for r in ref[1:3]]
    assert pending.callbacks() == [r[4] for r in ref]
    columns = _outcome(_kernel().pending_columns, pending, with_ts)
    if columns is not None:
        assert columns == _outcome(pending_columns_reference, ref, with_ts)
    # the batch at each producer state (a re-stamp: an epoch bump, a new producer id), and compressed
    for pid, epoch, seq, txn in stamps:
        expected = _outcome(encode_batch_reference, _Batch(ref, pid, epoch, seq, txn), None, None)
        assert _outcome(encode_batch, _Batch(pending, pid, epoch, seq, txn), None, None) == expected
    pid, epoch, seq, txn = stamps[0]
    expected = _outcome(encode_batch_reference, _Batch(ref, pid, epoch, seq, txn), "gzip", None)
    assert _outcome(encode_batch, _Batch(pending, pid, epoch, seq, txn), "gzip", None) == expected


def test_an_odd_record_turns_the_records_into_a_list_for_good() -> None:
    pending = _kernel().PendingRecords()
    pending.append((10, b"k", b"v", [("h", b"x")], _cb_a))
    pending.append((12, None, None, (), None))
    assert pending.is_encoded() and len(pending.records_bytes()) > 0
    pending.append((-1, None, b"v", (), None))
    assert not pending.is_encoded() and pending.records_bytes() is None
    pending.append((13, None, b"w", (), None))  # stays a list
    assert not pending.is_encoded()
    assert pending == [(10, b"k", b"v", [("h", b"x")], _cb_a), (12, None, None, (), None), (-1, None, b"v", (), None),
                       (13, None, b"w", (), None)]
    assert pending.callbacks() == [_cb_a, None, None, None]


def test_records_are_read_back_by_index_and_slice() -> None:
    pending = _kernel().PendingRecords()
    recs = [(1_700_000_000_000 + i, b"k%d" % i if i % 2 else None, b"v" * i, (), None) for i in range(10)]
    for r in recs:
        pending.append(r)
    assert pending[0] == recs[0] and pending[-1] == recs[-1] and pending[2:8:3] == recs[2:8:3]
    assert pending[::-1] == recs[::-1] and pending == recs and pending != recs[:-1]
    with pytest.raises(IndexError):
        pending[10]
    with pytest.raises(TypeError):
        pending["x"]
    assert bool(pending) and not bool(_kernel().PendingRecords())


_record = st.tuples(st.integers(0, 2**41), _bytes, _bytes, st.sampled_from([(), [("h", b"v")], [("k", None)]]),
                    st.sampled_from([None, None, None, _cb_a]))


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(st.one_of(_record, _record, _record, _record, _record, _record, _odd), min_size=1, max_size=40),
    limit=st.sampled_from([150, 400, 2000, 16384]),
    split_size=st.sampled_from([100, 300, 1000]),
    bump=st.tuples(st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)),
)
def test_a_kernel_batch_encodes_restamps_splits_and_completes_as_the_reference(
    records: list[Any], limit: int, split_size: int, bump: tuple[int, int, int]
) -> None:
    """A batch filled through the kernel (``try_append``) and one of the reference (a list, ``try_append_reference``)
    take the same records and give byte-identical batches: as drained, after an epoch bump, and split on
    MESSAGE_TOO_LARGE (each piece); their delivery callbacks get the same metadata."""
    nat, ref = ProducerBatch(TP, limit, 0), _reference_batch(limit)
    assert type(nat.pending) is _kernel().PendingRecords and type(ref.pending) is list
    got: dict[str, list[Any]] = {"nat": [], "ref": []}
    for i, (ts, k, v, h, cb) in enumerate(records):
        def on(which: str, cb: Any = cb) -> Any:
            return None if cb is None else lambda md, err: got[which].append((md, err))
        a = _outcome(nat.try_append, ts, k, v, h, on("nat"), i)
        b = _outcome(ref.try_append_reference, ts, k, v, h, on("ref"), i)
        assert (a is None) == (b is None) and isinstance(a, type) == isinstance(b, type)
    state = ("size_bytes", "base_timestamp", "max_timestamp", "max_record_size", "has_callbacks", "record_count")
    assert [getattr(nat, s) for s in state] == [getattr(ref, s) for s in state]
    for b in (nat, ref):
        b.close_for_appends()
        b.set_producer_state(7, 1, 100, True)
    assert _outcome(nat.records) == _outcome(ref.records)
    for b in (nat, ref):
        b.reset_producer_state(*bump)
    assert _outcome(nat.records) == _outcome(ref.records)
    nat_pieces = nat.split_into(split_size, 0)
    previous = _native.use_native(False)
    try:
        ref_pieces = ref.split_into(split_size, 0)
    finally:
        _native.use_native(previous)
    assert [p.record_count for p in nat_pieces] == [p.record_count for p in ref_pieces]
    for i, (p, q) in enumerate(zip(nat_pieces, ref_pieces, strict=True)):
        p.set_producer_state(7, 1, i * 50, False)
        q.set_producer_state(7, 1, i * 50, False)
        assert _outcome(p.records) == _outcome(q.records)
        p.done(1000 * i, -1, None)
        q.done(1000 * i, -1, None)
    assert got["nat"] == got["ref"]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(_bytes, min_size=1, max_size=60),
    keyed=st.booleans(),
    timestamps=st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 2**41)), min_size=60, max_size=60)),
    limit=st.sampled_from([200, 1000, 16384]),
    headers=st.sampled_from([(), [("h", b"v")]]),
    callback=st.sampled_from([None, _cb_a]),
)
def test_send_batch_appends_into_pending_records_as_into_the_reference_list(
    values: list[bytes | None], keyed: bool, timestamps: list[int | None] | None, limit: int, headers: Any, callback: Any
) -> None:
    """``append_pending`` (send_batch's loop) into a ``PendingRecords`` leaves the batch state and bytes of the
    reference appending tuples to a list."""
    keys = [None if v is None else v[:3] for v in values] if keyed else None
    ts = None if timestamps is None else timestamps[: len(values)]
    args = (keys, values, 0, len(values), ts, 1_700_000_000_000, headers, callback, 61, limit, -1, -1, 0, 1.0, 0, 0, 0)
    pending = _kernel().PendingRecords()
    ref: list[Any] = []
    got = _kernel().append_pending(pending, *args)
    assert got == batch_append.append_pending_reference(ref, *args)
    assert pending.is_encoded() and len(pending) == len(ref) == got[0]
    assert pending == ref
    assert encode_batch(_Batch(pending, 3, 0, 9), None, None) == encode_batch_reference(_Batch(ref, 3, 0, 9), None, None)


@settings(max_examples=60, deadline=None)
@given(
    size=st.sampled_from([None, b"", b"k", b"k" * 63, b"k" * 64, b"v" * 100, b"v" * 8191, b"v" * 8192]),
    keyed=st.booleans(),
    count=st.integers(1, 200),
    step=st.sampled_from([0, 1, 63, 64, 8192, 2**40]),
    back=st.booleans(),
    handed_out=st.lists(st.integers(0, 199), max_size=3),
    odd=st.lists(st.tuples(st.integers(0, 199), st.sampled_from([[("h", b"x")], _cb_a])), max_size=2),
    limit=st.sampled_from([400, 16384, 1 << 21]),
)
def test_one_record_appends_at_the_varint_edges_and_buffer_boundaries_equal_the_reference(
    size: bytes | None, keyed: bool, count: int, step: int, back: bool, handed_out: list[int],
    odd: list[tuple[int, Any]], limit: int,
) -> None:
    """``try_append``'s common case (no callback, no headers: sizes from the varint table, the buffer grown only
    when a record does not fit) == the reference: records past offset delta 63 (two-byte varints), sizes and
    timestamp steps at the varint widths' edges (a step back: a negative delta), the batch encoded and held while
    appends go on (the records then written into a copy), a header or a callback part-way (the general path from
    then on), the same records, batch state, bytes and the same full batch."""
    from pykafka_client.protocol.records.crc import crc32c

    nat, ref = ProducerBatch(TP, limit, 0), _reference_batch(limit)
    held: list[bytes] = []
    extra = dict(odd)
    for i in range(count):
        ts = 2**46 + (-1 if back and i % 3 == 2 else 1) * (i // 5) * step
        h: Any = extra.get(i) if isinstance(extra.get(i), list) else ()
        cb: Any = extra.get(i) if callable(extra.get(i)) else None
        key = None if not keyed or size is None else size[:70]
        a = _outcome(nat.try_append, ts, key, size, h, cb, i)
        b = _outcome(ref.try_append_reference, ts, key, size, h, cb, i)
        assert (a is None) == (b is None) and isinstance(a, type) == isinstance(b, type)
        if a is None:
            break
        if i in handed_out and cast(_native.PendingRecordsApi, nat.pending).is_encoded():
            held.append(_kernel().encode_batch(nat.pending, 1, 0, 0, False, crc32c))
    state = ("size_bytes", "base_timestamp", "max_timestamp", "max_record_size", "has_callbacks", "record_count")
    assert [getattr(nat, s) for s in state] == [getattr(ref, s) for s in state]
    assert nat.pending == ref.pending
    kept = [bytes(bytearray(x)) for x in held]
    for b in (nat, ref):
        b.close_for_appends()
        b.set_producer_state(7, 1, 100, True)
    assert _outcome(nat.records) == _outcome(ref.records)
    assert [bytes(bytearray(x)) for x in held] == kept  # a batch handed out never changes


def test_a_batch_without_headers_or_callbacks_keeps_no_object_per_record() -> None:
    import gc

    b = ProducerBatch(TP, 16384, 0)
    for i in range(100):
        assert b.try_append(1_700_000_000_000 + i // 10, None, b"v" * 100, (), None, 0) is not None
    assert gc.get_referents(b.pending) == []
    (batch,) = list(MemoryRecords(b.records()).batches())
    assert batch.is_valid() and [r.value for r in batch] == [b"v" * 100] * 100
    assert [r.timestamp for r in batch] == [1_700_000_000_000 + i // 10 for i in range(100)]



# sizes and timestamp steps at the varint widths' edges (zigzag: 63 / 64 are 1 / 2 bytes, 8191 / 8192 are 2 / 3)
_edge_bytes = st.sampled_from([None, b"", b"k", b"k" * 63, b"k" * 64, b"v" * 100, b"v" * 8191, b"v" * 8192])


@settings(max_examples=60, deadline=None)
@given(
    key=_edge_bytes, value=_edge_bytes, odd=st.lists(st.tuples(st.integers(0, 299), _edge_bytes, _edge_bytes), max_size=3),
    count=st.integers(1, 300), step=st.sampled_from([0, 1, 63, 64, 8192, 2**40]), with_ts=st.booleans(),
    headers=st.sampled_from([(), [("h", b"x")], [("h" * 70, b"y" * 70)]]),
)
def test_the_columns_of_a_long_encoded_batch_equal_the_reference(
    key: bytes | None, value: bytes | None, odd: list[tuple[int, bytes | None, bytes | None]], count: int, step: int,
    with_ts: bool, headers: Any,
) -> None:
    """A send_batch-like batch (one key and value size, records past offset delta 64, whose varint takes two
    bytes) with a few records of other sizes: the columns the kernel reads from the encoded records (skimming each
    record, h/iosend) are the reference's."""
    records: list[Any] = [(1_700_000_000_000 + (i // 7) * step, key, value, headers, None) for i in range(count)]
    for at, k, v in odd:
        if at < count:
            records[at] = (records[at][0], k, v, (), None)
    pending = _kernel().PendingRecords()
    for rec in records:
        pending.append(rec)
    assert pending.is_encoded()
    assert _kernel().pending_columns(pending, with_ts) == pending_columns_reference(records, with_ts)


@settings(max_examples=80, deadline=None)
@given(
    count=st.integers(1, 40),
    at=st.integers(0, 39),
    column=st.sampled_from(["key", "value", "timestamp", None]),
    keyed=st.booleans(),
    via=st.sampled_from(["append", "send_batch", "try_append"]),
    with_ts=st.booleans(),
)
def test_the_columns_noted_at_append_equal_the_reference_when_one_record_differs_in_one_column(
    count: int, at: int, column: str | None, keyed: bool, via: str, with_ts: bool
) -> None:
    """The kernel notes each record's key size, value size and timestamp against the first's as it writes it
    (h/sender6: pending_columns answers a uniform batch without walking it; send()'s common case notes nothing and
    the records are walked): one record differing in one column only, anywhere (the first, the last), through any
    writer (``append``, send_batch's ``append_pending``, ``ProducerBatch.try_append``), gives the reference's
    columns."""
    base = 1_700_000_000_000
    keys: list[bytes | None] = [b"k" if keyed else None] * count
    values: list[bytes | None] = [b"v" * 100] * count
    stamps: list[int | None] = [base] * count
    if column is not None and at < count:
        if column == "key":
            keys[at] = None if keyed else b"kk"
        elif column == "value":
            values[at] = b"v" * 99
        else:
            stamps[at] = base + 1
    records: list[Any] = [(stamps[i], keys[i], values[i], (), None) for i in range(count)]
    pending = _kernel().PendingRecords()
    if via == "send_batch":
        args = (keys, values, 0, count, stamps, base, (), None, 61, 1 << 20, -1, -1, 0, 1.0, 0, 0, 0)
        assert _kernel().append_pending(pending, *args)[0] == count
    elif via == "try_append":
        batch = ProducerBatch(TP, 1 << 20, 0)
        for ts, key, value, _, _ in records:
            assert batch.try_append(ts, key, value, (), None, 0) is not None
        pending = batch.pending
    else:
        for rec in records:
            pending.append(rec)
    assert pending.is_encoded() and pending == records
    assert _kernel().pending_columns(pending, with_ts) == pending_columns_reference(records, with_ts)


def test_an_encoded_batch_is_never_changed_by_a_later_append_or_re_stamp() -> None:
    """The records' buffer becomes the encoded batch (its header written in front, not copied) only while nothing
    else holds it: a batch handed out stays as it was through later appends and re-stamps."""
    from pykafka_client.protocol.records.crc import crc32c

    kernel = _kernel()
    pending, ref = kernel.PendingRecords(64), []
    for rec in [(5, None, b"v" * 40, (), None), (6, b"k", b"w", [("h", b"x")], None)]:
        pending.append(rec)
        ref.append(rec)
    first = kernel.encode_batch(pending, 1, 0, 0, False, crc32c)
    kept = bytes(bytearray(first))
    assert first == encode_batch_reference(_Batch(ref, 1, 0, 0), None, None)[0]
    again = kernel.encode_batch(pending, 4, 1, 9, True, crc32c)  # a re-stamp while the first is held
    assert first == kept and again == encode_batch_reference(_Batch(ref, 4, 1, 9, True), None, None)[0]
    for rec in [(7, None, b"z" * 100, (), None)] * 3:  # appends after the hand-out (and past the hint)
        pending.append(rec)
        ref.append(rec)
    third = kernel.encode_batch(pending, 4, 1, 9, True, crc32c)
    assert first == kept and third == encode_batch_reference(_Batch(ref, 4, 1, 9, True), None, None)[0]
    (decoded,) = MemoryRecords(third).batches()
    assert decoded.is_valid() and [r.value for r in decoded] == [r[2] for r in ref]
    assert pending == ref


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_compressed_batch_is_its_records_bytes_compressed_as_the_reference(codec: str) -> None:
    """With a codec the records section as encoded at append is compressed whole (no record rebuilt): the batch and
    the compression ratio are the reference builder's."""
    pending, ref = _kernel().PendingRecords(), []
    for i in range(200):
        rec = (1_700_000_000_000 + i // 7, b"key-%d" % (i % 5) if i % 3 else None, b"value %d " % i * 4,
               [("h", b"%d" % i)] if i % 10 == 0 else (), None)
        pending.append(rec)
        ref.append(rec)
    for stamp in [(-1, -1, -1, False), (12, 3, 400, True)]:
        got = encode_batch(_Batch(pending, *stamp), codec, None)
        assert got == encode_batch_reference(_Batch(ref, *stamp), codec, None)
        assert got[1] < 1.0
        (decoded,) = MemoryRecords(got[0]).batches()
        assert decoded.is_valid() and [r.value for r in decoded] == [r[2] for r in ref]


def test_the_collector_tracks_pending_records_once_they_can_be_in_a_cycle() -> None:
    """Untracked while they hold only bytes (no work for the collector per batch); tracked from the first callback
    (or in list mode), so a cycle through a callback that refers back to them is collected."""
    import gc
    import weakref

    class Callback:
        pending: Any = None

        def __call__(self, md: RecordMetadata | None, err: BaseException | None) -> None:
            return None

    pending = _kernel().PendingRecords()
    pending.append((1, None, b"v", (), None))
    assert not gc.is_tracked(pending)
    cb = Callback()
    cb.pending = pending
    pending.append((2, None, b"w", (), cb))
    assert gc.is_tracked(pending) and pending.callbacks() == [None, cb]
    gone = weakref.ref(cb)
    del cb, pending
    gc.collect()
    assert gone() is None
    listed = _kernel().PendingRecords()
    listed.append((-1, None, b"v", (), None))
    assert gc.is_tracked(listed) and not listed.is_encoded()


_sized = st.one_of(st.none(), st.sampled_from([0, 1, 63, 64, 100, 8191, 8192]).map(lambda n: b"v" * n), st.binary(max_size=80))


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(st.one_of(_sized, st.just(7)), min_size=1, max_size=150),
    keyed=st.booleans(),
    timestamps=st.one_of(
        st.none(),
        st.lists(st.one_of(st.none(), st.integers(0, 2**62), st.just(-1), st.just(2**62 + 1)), min_size=150, max_size=150),
    ),
    limit=st.sampled_from([200, 1000, 16384, 40000]),
    headers=st.sampled_from([(), [("h", b"v")], [("k", None), ("kk", b"")]]),
    ratio=st.sampled_from([1.0, 0.5, 1.1]),
    sticky=st.sampled_from([(0, 0), (300, 100), (5000, 16384), (10**6, 1)]),
    default_ts=st.sampled_from([0, 1_700_000_000_000, 2**62, 2**62 + 1, -5]),
)
def test_append_pending_rounds_match_the_reference(
    values: list[Any], keyed: bool, timestamps: list[Any] | None, limit: int, headers: Any, ratio: float,
    sticky: tuple[int, int], default_ts: int,
) -> None:
    """``append_pending`` round after round into one ``PendingRecords`` (send_batch's bulk rounds of one batch: the
    state threaded through, sticky accounting and a compression ratio, the kernel's common-case loop and the
    records it leaves to its general loop: a value that is not bytes, a timestamp or default out of range) gives
    the reference's results, records and bytes."""
    keys = [v[:3] if isinstance(v, bytes) else None for v in values] if keyed else None
    ts = None if timestamps is None else timestamps[: len(values)]
    switch_bytes, sticky_bytes = sticky
    pending = _kernel().PendingRecords()
    ref: list[Any] = []
    state_k = state_r = (61, -1, -1, 0, 0)  # size, base_ts, max_ts, max_rec, produced
    i = 0
    while i < len(values):
        got = _kernel().append_pending(
            pending, keys, values, i, len(values), ts, default_ts, headers, None, state_k[0], limit, *state_k[1:4],
            ratio, state_k[4], switch_bytes, sticky_bytes,
        )
        if got is None:  # input the kernel leaves to the reference (which send_batch's checks never give it): skipped
            i += 1
            continue
        # the reference over the records the kernel took (it stops where the kernel does, or at a record the kernel
        # left to it, which the reference assumes checked)
        want = batch_append.append_pending_reference(
            ref, keys, values, i, got[0], ts, default_ts, headers, None, state_r[0], limit, *state_r[1:4], ratio,
            state_r[4], switch_bytes, sticky_bytes,
        )
        assert got == want
        assert pending == ref
        nxt, size, base_ts, max_ts, max_rec, produced, _ = got
        state_k = state_r = (size, base_ts, max_ts, max_rec, produced)
        i = nxt if nxt > i else i + 1
    assert encode_batch(_Batch(pending, 3, 0, 9), None, None) == encode_batch_reference(_Batch(ref, 3, 0, 9), None, None)


def test_append_pending_checks_its_arguments() -> None:
    kernel = _kernel()
    pending = kernel.PendingRecords()
    good = (None, [b"v"], 0, 1, None, 5, (), None, 61, 1000, -1, -1, 0, 1.0, 0, 0, 0)
    assert kernel.append_pending(pending, *good)[0] == 1
    with pytest.raises(TypeError):
        kernel.append_pending(pending, *good[:-1])
    with pytest.raises(TypeError):
        kernel.append_pending(pending, None, (b"v",), *good[2:])  # values must be a list
    with pytest.raises(TypeError):
        kernel.append_pending(pending, *good[:2], "0", *good[3:])
    with pytest.raises(OverflowError):
        kernel.append_pending(pending, *good[:8], 2**64, *good[9:])
    assert len(pending) == 1
