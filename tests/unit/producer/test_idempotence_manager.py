"""The idempotence manager's one-call answers for the I/O thread: ``prepare_for_drain`` (the drain's checks and a
new batch's sequence, contract statements 67-72) against the same step asked question by question, ``is_settled``
(the Sender's per-iteration step has nothing to do) and the in-flight order of ``PartitionEntry.add_in_flight``."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import ClusterAuthorizationFailedError
from pykafka_client.producer.idempotence_manager import NONE, PartitionEntry
from pykafka_client.producer.producer_batch import INT_MAX, NO_SEQUENCE, ProducerBatch
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.producer.transaction_state import State
from pykafka_client.structs import TopicPartition

TP = TopicPartition("t", 0)
OTHER = TopicPartition("t", 1)
PID = 1000


def batch(records: int, tp: TopicPartition = TP) -> ProducerBatch:
    b = ProducerBatch(tp, 16384, 0)
    for _ in range(records):
        assert b.try_append(1, None, b"v", [], None, 0) is not None
    return b


def reference_drain_step(tm: TransactionManager, first: ProducerBatch, tp: TopicPartition) -> bool:
    """The drain's idempotence step asked question by question (Java ``shouldStopDrainBatchesForPartition`` and
    the stamping of a batch without a sequence), as the accumulator did before ``prepare_for_drain``."""
    if not tm.is_send_to_partition_allowed(tp) or not tm.has_valid_producer_id():
        return False
    if not first.has_sequence():
        if tm.has_inflight_batches(tp) and tm.has_stale_producer_id_and_epoch(tp):
            return False
        if tm.has_unresolved_sequence(tp):
            return False
    first_in_flight = tm.first_in_flight_sequence(tp)
    if first_in_flight != NO_SEQUENCE and first.has_sequence() and first.base_sequence != first_in_flight:
        return False
    if not first.has_sequence():
        tm.maybe_update_producer_id_and_epoch(tp)
        pid, epoch = tm.producer_id_and_epoch()
        seq = tm.sequence_number(tp)
        first.set_producer_state(pid, epoch, seq, tm.is_transactional())
        tm.increment_sequence_number(tp, first.record_count)
        tm.add_in_flight_batch(first)
    return True


@dataclass(frozen=True)
class Scenario:
    transactional: bool
    in_transaction: bool  # TP added to the transaction
    init: str  # "none": no producer id; "ready"; "invalid": READY with producer id -1; "fatal"
    start_sequence: int  # TP's first sequence (near INT_MAX: wraps)
    in_flight: tuple[int, ...]  # record counts of TP's batches in flight
    bump: str  # "none"; "other": epoch bumped for another partition (TP stale); "tp": bumped for TP (re-stamped)
    unresolved: bool  # the last in-flight batch of TP expired
    candidate: int  # -1: a new batch; i >= 0: in-flight batch i retried (min(i, len - 1))
    records: int


scenarios = st.builds(
    Scenario,
    transactional=st.booleans(),
    in_transaction=st.booleans(),
    init=st.sampled_from(["none", "ready", "ready", "ready", "invalid", "fatal"]),
    start_sequence=st.sampled_from([0, 7, INT_MAX - 3]),
    in_flight=st.lists(st.integers(1, 4), max_size=3).map(tuple),
    bump=st.sampled_from(["none", "other", "tp"]),
    unresolved=st.booleans(),
    candidate=st.sampled_from([-1, -1, -1, 0, 1, 2]),
    records=st.integers(1, 4),
)


def build(s: Scenario) -> tuple[TransactionManager, ProducerBatch, list[ProducerBatch]]:
    """A manager in the scenario's state, the batch to drain and TP's in-flight batches."""
    tm = TransactionManager("txn" if s.transactional else None)
    if s.init != "none":
        tm.set_producer_id_and_epoch(-1 if s.init == "invalid" else PID, 0)
    if s.transactional and s.init == "ready":
        tm.begin_transaction()
        if s.in_transaction:
            tm.partitions_in_transaction.add(TP)
    tm.increment_sequence_number(TP, s.start_sequence)
    in_flight: list[ProducerBatch] = []
    for n in s.in_flight:
        b = batch(n)
        b.set_producer_state(PID, 0, tm.sequence_number(TP), s.transactional)
        tm.increment_sequence_number(TP, n)
        tm.add_in_flight_batch(b)
        in_flight.append(b)
    if s.unresolved and in_flight:
        tm.mark_sequence_unresolved(in_flight[-1])
    if s.bump != "none" and not s.transactional and s.init == "ready":
        tm.request_epoch_bump_for_partition(TP if s.bump == "tp" else OTHER)
        tm.bump_idempotent_epoch_and_reset_id_if_needed()
    if s.init == "fatal":
        tm.transition_to_fatal_error(ClusterAuthorizationFailedError("no"))
    first = in_flight[min(s.candidate, len(in_flight) - 1)] if s.candidate >= 0 and in_flight else batch(s.records)
    return tm, first, in_flight


def observe(tm: TransactionManager, first: ProducerBatch, in_flight: list[ProducerBatch]) -> object:
    batches = [first, *in_flight]

    def index(b: ProducerBatch) -> int:
        return next(i for i, x in enumerate(batches) if x is b)

    tracked = tm.next_batch_by_sequence(TP)
    return (
        (first.producer_id, first.producer_epoch, first.base_sequence, first.is_transactional),
        [(b.producer_id, b.producer_epoch, b.base_sequence, b.reopened) for b in in_flight],
        tm.producer_id_and_epoch(),
        tm.sequence_number(TP),
        tm.last_acked_sequence(TP),
        tm.has_stale_producer_id_and_epoch(TP),
        tm.has_unresolved_sequence(TP),
        None if tracked is None else index(tracked),
        [index(b) for b in tm._partitions[TP].in_flight],  # the order kept
    )


@settings(max_examples=400, deadline=None)
@given(scenarios)
def test_prepare_for_drain_is_the_drain_step_asked_question_by_question(s: Scenario) -> None:
    tm, first, in_flight = build(s)
    expected = reference_drain_step(tm, first, TP)
    tm2, first2, in_flight2 = build(s)
    assert tm2.prepare_for_drain(first2, TP) is expected
    assert observe(tm2, first2, in_flight2) == observe(tm, first, in_flight)


def test_prepare_for_drain_stamps_new_batches_in_sequence_and_tracks_them() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(PID, 3)
    a, b = batch(3), batch(2)
    assert tm.prepare_for_drain(a, TP) and tm.prepare_for_drain(b, TP)
    assert (a.producer_id, a.producer_epoch, a.base_sequence, b.base_sequence) == (PID, 3, 0, 3)
    assert tm.sequence_number(TP) == 5 and tm.first_in_flight_sequence(TP) == 0
    # a retry of the second batch waits for the first; the first goes
    assert not tm.prepare_for_drain(b, TP) and tm.prepare_for_drain(a, TP)
    assert tm.sequence_number(TP) == 5  # a retry is not stamped again


def test_prepare_for_drain_restarts_a_stale_partition_at_0_once_its_old_batches_are_done() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(PID, 0)
    old = batch(2)
    assert tm.prepare_for_drain(old, TP)
    tm.request_epoch_bump_for_partition(OTHER)  # a bump for another partition: TP's entry is on the old epoch
    tm.bump_idempotent_epoch_and_reset_id_if_needed()
    new = batch(3)
    assert not tm.prepare_for_drain(new, TP) and not new.has_sequence()
    tm.handle_completed_batch(old, 0)
    assert tm.prepare_for_drain(new, TP)
    assert (new.producer_epoch, new.base_sequence, tm.sequence_number(TP), tm.last_acked_sequence(TP)) == (1, 0, 3, -1)


def test_prepare_for_drain_waits_without_a_producer_id_and_after_a_fatal_error() -> None:
    tm = TransactionManager()
    b = batch(1)
    assert not tm.prepare_for_drain(b, TP) and not b.has_sequence()
    tm.set_producer_id_and_epoch(PID, 0)
    tm.transition_to_fatal_error(ClusterAuthorizationFailedError("no"))
    assert not tm.prepare_for_drain(b, TP) and not b.has_sequence()


def test_prepare_for_drain_of_a_transaction_waits_for_the_partition_to_be_added() -> None:
    tm = TransactionManager("txn")
    tm.set_producer_id_and_epoch(PID, 0)
    tm.begin_transaction()
    b = batch(2)
    assert not tm.prepare_for_drain(b, TP)
    tm.partitions_in_transaction.add(TP)
    assert tm.prepare_for_drain(b, TP) and b.is_transactional and b.base_sequence == 0


def settled_manager() -> TransactionManager:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(PID, 0)
    return tm


def test_is_settled_only_when_the_sender_step_has_nothing_to_do() -> None:
    tm = settled_manager()
    assert tm.is_settled()
    # the step it stands for changes nothing then and asks for no producer id
    tm.maybe_resolve_sequences()
    assert not tm.has_fatal_error() and not tm.is_transactional() and not tm.needs_producer_id()
    assert tm.state is State.READY and tm.producer_id_and_epoch() == (PID, 0) and tm.is_settled()


def unsettle_fresh(tm: TransactionManager) -> None:
    tm.reset_idempotent_producer_id()


def unsettle_bump(tm: TransactionManager) -> None:
    tm.request_epoch_bump_for_partition(TP)


def unsettle_reset(tm: TransactionManager) -> None:
    tm.request_producer_id_reset_for_partition(TP)


def unsettle_unresolved(tm: TransactionManager) -> None:
    b = batch(1)
    b.set_producer_state(PID, 0, 0, False)
    tm.mark_sequence_unresolved(b)


def unsettle_in_flight_init(tm: TransactionManager) -> None:
    tm.init_producer_id_in_flight = True


def unsettle_fatal(tm: TransactionManager) -> None:
    tm.transition_to_fatal_error(ClusterAuthorizationFailedError("no"))


def unsettle_invalid_id(tm: TransactionManager) -> None:
    tm.set_producer_id_and_epoch(-1, -1)


@pytest.mark.parametrize(
    "unsettle",
    [unsettle_fresh, unsettle_bump, unsettle_reset, unsettle_unresolved, unsettle_in_flight_init, unsettle_fatal,
     unsettle_invalid_id],
)
def test_is_settled_is_false_while_the_sender_step_has_work(unsettle: object) -> None:
    tm = settled_manager()
    assert callable(unsettle)
    unsettle(tm)
    assert not tm.is_settled()


def test_a_transactional_manager_is_never_settled() -> None:
    tm = TransactionManager("txn")
    tm.set_producer_id_and_epoch(PID, 0)
    assert tm.state is State.READY and not tm.is_settled()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=12))
def test_add_in_flight_keeps_base_sequence_order_after_equal_ones(steps: list[tuple[int, bool]]) -> None:
    """``steps``: (base sequence, re-add an already tracked batch instead)."""
    e = PartitionEntry(NONE)
    expected: list[ProducerBatch] = []
    for seq, again in steps:
        if again and expected:
            b = expected[seq % len(expected)]
        else:
            b = batch(1)
            b.set_producer_state(PID, 0, seq, False)
            expected.insert(bisect.bisect_right([x.base_sequence for x in expected], seq), b)
        e.add_in_flight(b)
        assert [id(x) for x in e.in_flight] == [id(x) for x in expected]


def reference_handle_completed_batch(tm: TransactionManager, b: ProducerBatch, base_offset: int) -> None:
    """``handle_completed_batch`` asked question by question (the batch's last_sequence and record_count, max(), the
    entry's remove_in_flight), as it was before its one-frame form."""
    e = tm._entry(b.topic_partition)
    last = b.last_sequence
    if last > e.last_acked_sequence:
        e.last_acked_sequence = last
    if base_offset >= 0:
        e.last_acked_offset = max(e.last_acked_offset, base_offset + b.record_count - 1)
    e.remove_in_flight(b)


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    start=st.sampled_from([0, 7, INT_MAX - 6, INT_MAX - 2, INT_MAX]),
    order=st.randoms(use_true_random=False),
    offsets=st.lists(st.integers(-1, 50), min_size=4, max_size=4),
    unstamped=st.booleans(),
)
def test_handle_completed_batch_is_the_question_by_question_reference(
    counts: list[int], start: int, order: object, offsets: list[int], unstamped: bool
) -> None:
    """Completing a partition's in-flight batches in any order (sequences wrapping past Int.MAX_VALUE, base offsets
    lower than one acknowledged before, a batch without a sequence, a batch completed twice) leaves the last
    acknowledged sequence and offset and the in-flight batches as the reference does."""
    managers, batches = [], []
    for _ in range(2):
        tm = TransactionManager()
        tm.set_producer_id_and_epoch(PID, 0)
        tm.increment_sequence_number(TP, start)  # sequences start near the wrap (from 0 the increment is exact)
        bs = [batch(n) for n in counts]
        for b in bs:
            assert tm.prepare_for_drain(b, TP)
        if unstamped:
            bs.append(batch(2))  # never stamped: no sequence, not in flight
        managers.append(tm)
        batches.append(bs)
    picks = list(range(len(batches[0])))
    order.shuffle(picks)  # type: ignore[attr-defined]
    picks.append(picks[0])  # completed again: nothing more moves
    for step, i in enumerate(picks):
        offset = offsets[step % len(offsets)]
        managers[0].handle_completed_batch(batches[0][i], offset)
        reference_handle_completed_batch(managers[1], batches[1][i], offset)
        got, want = (
            (tm.last_acked_sequence(TP), tm.last_acked_offset(TP), [b.base_sequence for b in tm._entry(TP).in_flight])
            for tm in managers
        )
        assert got == want
