"""The kernel's ``producer_next_entry`` answers as its reference, ``ProducerStateManager.next_append_entry`` without the
kernel, over random producers (epochs, up to 5 cached batches with sequences near the Int.MAX_VALUE wrap, open
transactions or none) and random batches (next sequences, retries of a cached batch, gaps, other epochs, control and
transactional batches, unknown or negative producer ids)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.producer_state.producer_append_info import in_sequence
from mini_broker.producer_state.producer_state_entry import INT_MAX, BatchMetadata, ProducerStateEntry
from mini_broker.producer_state.producer_state_manager import PendingAppend, ProducerStateManager, next_last_sequence
from pykafka_client.protocol.records import _native

PID = 42

sequences = st.one_of(st.integers(0, 20), st.integers(INT_MAX - 20, INT_MAX))
cached_batches = st.lists(st.tuples(sequences, st.integers(0, 30)), max_size=5)


@pytest.mark.skipif(not _native.native_available(), reason="the compiled kernel is not built")
@settings(max_examples=600, deadline=None)
@given(epoch=st.integers(0, 2), cached=cached_batches, txn=st.sampled_from([None, 0, 17]),
       producer_id=st.sampled_from([PID, PID, PID, 43, -1]), batch_epoch=st.sampled_from([0, 1, 1, 2]),
       how=st.sampled_from(["next", "next", "retry", "any"]), any_seq=sequences, delta=st.integers(0, 30),
       transactional=st.booleans(), control=st.sampled_from([False, False, False, True]))
def test_the_kernel_check_answers_as_the_reference(
        tmp_path_factory: pytest.TempPathFactory, epoch: int, cached: list[tuple[int, int]], txn: int | None,
        producer_id: int, batch_epoch: int, how: str, any_seq: int, delta: int, transactional: bool,
        control: bool) -> None:
    state = ProducerStateManager("t-0", str(tmp_path_factory.getbasetemp()))
    batches = [BatchMetadata(next_last_sequence(first, d), 100 + i * 40 + d, d, 1000 + i)
               for i, (first, d) in enumerate(cached)]
    entry = ProducerStateEntry(PID, epoch, current_txn_first_offset=txn, batches=batches)
    state.complete_append(PendingAppend({PID: entry, -1: entry}, 1000, [], []))
    if how == "next" and batches:
        first_seq = 0 if batches[-1].last_seq == INT_MAX else batches[-1].last_seq + 1
    elif how == "retry" and batches:
        first_seq, delta = batches[-1].first_seq, batches[-1].offset_delta
    else:
        first_seq = any_seq
    args = (producer_id, batch_epoch, first_seq, delta, transactional, control)
    assert _native.kernel is not None
    got = state.next_append_entry(*args)
    previous = _native.use_native(False)
    try:
        assert _native.kernel is None
        reference = state.next_append_entry(*args)
    finally:
        _native.use_native(previous)
    assert got is reference
    assert (got is not None) == (producer_id == PID and bool(batches) and in_sequence(batches[-1].last_seq, first_seq) and batch_epoch == epoch
                                 and not control and (txn is not None) == transactional
                                 and not _is_retry(batches, first_seq, delta))


def _is_retry(batches: list[BatchMetadata], first_seq: int, delta: int) -> bool:
    return any(b.first_seq == first_seq and b.last_seq == next_last_sequence(first_seq, delta) for b in batches)
