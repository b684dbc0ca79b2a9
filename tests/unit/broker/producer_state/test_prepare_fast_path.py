"""ProducerStateManager.prepare_append's fast path (a known producer's next data batch, alone in its append) gives
exactly what the general path gives: the same pending updates, duplicates and errors, and the same state after
complete_append, over random sequences of appends (epochs, sequences in and out of order, retries, transactions); and
the log's common append (next_append_entry, then complete_next_append once written, the batch added to the entry in
place) leaves the same state, and changes nothing until it completes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.producer_state import BatchMetadata, ProducerStateManager
from mini_broker.producer_state.producer_state_entry import ProducerStateEntry
from mini_broker.producer_state.producer_state_manager import PendingAppend
from pykafka_client.errors_base import KafkaError
from tests.unit.broker.producer_state.test_producer_state import B


def _entry(e: ProducerStateEntry) -> tuple[object, ...]:
    return (e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset,
            list(e.batch_metadata))


def _outcome(result: BatchMetadata | PendingAppend) -> tuple[object, ...]:
    if isinstance(result, BatchMetadata):
        return "duplicate", result
    return ("pending", {pid: _entry(e) for pid, e in result.updated.items()}, result.end_offset, result.started_txns,
            result.completed_txns)


def _general_only(manager: ProducerStateManager) -> ProducerStateManager:
    manager._prepare_next_batch = lambda batch, first_offset: None  # type: ignore[method-assign]
    return manager


# a batch: (producer id, epoch step, sequence: next / repeat the last / jump / 0, records, transactional, control)
batches = st.tuples(st.sampled_from([7, 8]), st.sampled_from([0, 0, 0, 1, -1]),
                    st.sampled_from(["next", "next", "next", "retry", "jump", "zero", "wrap"]),
                    st.integers(1, 4), st.booleans(), st.sampled_from([False, False, False, True]))


@settings(max_examples=300, deadline=None)
@given(st.lists(batches, min_size=1, max_size=25))
def test_the_fast_path_answers_as_the_general_path(tmp_path_factory: pytest.TempPathFactory,
                                                    ops: list[tuple[int, int, str, int, bool, bool]]) -> None:
    d = tmp_path_factory.mktemp("psm")
    fast = ProducerStateManager("t-0", str(d))
    general = _general_only(ProducerStateManager("t-0", str(d)))
    in_place = ProducerStateManager("t-0", str(d))
    end = 0
    epochs = {7: 0, 8: 0}
    next_seq = {7: 0, 8: 0}
    last: dict[int, B] = {}
    for pid, epoch_step, how, records, transactional, control in ops:
        epochs[pid] = max(0, epochs[pid] + epoch_step)
        seq = {"next": next_seq[pid], "jump": next_seq[pid] + 3, "zero": 0, "wrap": 0x7FFFFFFF,
               "retry": last[pid].base_sequence if pid in last else 0}[how]
        marker = (False, 0) if control else None
        batch = B(pid, epochs[pid], seq, records, max_timestamp=1000 + end, is_transactional=transactional or control,
                  is_control=control, marker=marker)
        outcomes = []
        for manager in (fast, general):
            try:
                outcomes.append(_outcome(manager.prepare_append([batch], end)))
            except KafkaError as e:
                outcomes.append(("error", type(e), str(e)))
        assert outcomes[0] == outcomes[1]
        before = {p: _entry(e) for p, e in in_place.active_producers.items()}
        entry = in_place.next_append_entry(pid, epochs[pid], seq, records - 1, batch.is_transactional, control)
        assert {p: _entry(e) for p, e in in_place.active_producers.items()} == before  # nothing changed yet
        if entry is not None:
            assert outcomes[0][0] == "pending"  # accepted only what the general path accepts
        if outcomes[0][0] == "pending":
            for manager in (fast, general):
                checked = manager.prepare_append([batch], end)
                assert isinstance(checked, PendingAppend)
                manager.complete_append(checked)
            if entry is not None:
                in_place.complete_next_append(entry, seq, records - 1, batch.max_timestamp, end)
            else:
                checked = in_place.prepare_append([batch], end)
                assert isinstance(checked, PendingAppend)
                in_place.complete_append(checked)
            end += records
            next_seq[pid] = (seq + records) & 0x7FFFFFFF
            last[pid] = batch
        assert {p: _entry(e) for p, e in fast.active_producers.items()} == {
            p: _entry(e) for p, e in general.active_producers.items()} == {
            p: _entry(e) for p, e in in_place.active_producers.items()}
        assert fast.map_end_offset == general.map_end_offset == in_place.map_end_offset
        assert fast.first_unstable_offset() == general.first_unstable_offset()


def test_a_producers_next_batch_takes_the_fast_path(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The path the test above compares is the one taken: the second in-order batch of a producer."""
    manager = ProducerStateManager("t-0", str(tmp_path_factory.mktemp("psm")))
    taken: list[object] = []
    original: Callable[[B, int], PendingAppend | None] = manager._prepare_next_batch

    def spy(batch: B, first_offset: int) -> PendingAppend | None:
        result = original(batch, first_offset)
        taken.append(result)
        return result

    manager._prepare_next_batch = spy  # type: ignore[assignment,method-assign]
    first = manager.prepare_append([B(7, 0, 0, 3)], 0)
    assert isinstance(first, PendingAppend) and taken == [None]  # an unknown producer: the general path
    manager.complete_append(first)
    second = manager.prepare_append([B(7, 0, 3, 2)], 3)
    assert isinstance(second, PendingAppend) and taken[-1] is second
    assert [tuple(b) for b in second.updated[7].batch_metadata] == [(2, 2, 2, 1000), (4, 4, 1, 1000)]
    assert second.end_offset == 5


def test_a_producer_expired_between_the_check_and_the_write_is_put_back(tmp_path_factory: pytest.TempPathFactory
                                                                        ) -> None:
    """complete_next_append after the producer expired (the expiry task runs without the log's lock) leaves it with
    the batch, as complete_append of a prepared append does; an entry keeps its last five batches."""
    manager = ProducerStateManager("t-0", str(tmp_path_factory.mktemp("psm")), producer_id_expiration_ms=10)
    first = manager.prepare_append([B(7, 0, 0, 1, max_timestamp=0)], 0)
    assert isinstance(first, PendingAppend)
    manager.complete_append(first)
    for i in range(1, 7):
        entry = manager.next_append_entry(7, 0, i, 0, False, False)
        assert entry is not None
        if i == 6:
            assert manager.remove_expired_producers(10**6) == [7] and manager.last_entry(7) is None
        manager.complete_next_append(entry, i, 0, 1000 + i, i)
    entry = manager.last_entry(7)
    assert entry is not None and [b.last_seq for b in entry.batch_metadata] == [2, 3, 4, 5, 6]
    assert entry.last_timestamp == 1006 and manager.map_end_offset == 7
