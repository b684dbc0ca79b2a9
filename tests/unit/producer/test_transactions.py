"""Transactions: contract statements 75-85 (one test per statement, named after it), the error classes,
and the priority queue, driven step by step on MockClient + MockTime (Java TransactionManagerTest and the
transactional SenderTest cases)."""

from __future__ import annotations

import pytest

from pykafka_client.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    IllegalStateError,
    KafkaTimeoutError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionalIdAuthorizationError,
    UnsupportedVersionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.transaction_state import State
from pykafka_client.producer.transactional_request_result import TransactionalRequestResult
from pykafka_client.producer.txn_request_handlers import (
    GROUP_COORDINATOR,
    TRANSACTION_COORDINATOR,
    AddPartitionsToTxnHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
)
from pykafka_client.protocol.messages import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from pykafka_client.structs import OffsetAndMetadata, TopicPartition
from tests.unit.producer.sender_harness import PID, TP0, TP1, batches_in, init_pid_response, produce_response
from tests.unit.producer.txn_harness import (
    GROUP,
    TXN_ID,
    TxnHarness,
    add_offsets_response,
    add_partitions_response,
    end_txn_response,
    find_coordinator_response,
    is_add_offsets,
    is_add_partitions,
    is_end_txn,
    is_find_coordinator,
    is_init_pid,
    is_txn_offset_commit,
    txn_offset_commit_response,
)

NONE = 0
NOT_COORDINATOR = 16
COORDINATOR_NOT_AVAILABLE = 15
CONCURRENT_TRANSACTIONS = 51
INVALID_PRODUCER_EPOCH = 47
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TOPIC_AUTHORIZATION_FAILED = 29
TRANSACTION_ABORTABLE = 120
ILLEGAL_GENERATION = 22
FENCED_INSTANCE_ID = 82
MESSAGE_TOO_LARGE = 10
INVALID_RECORD = 87


class Group:
    """A ConsumerGroupMetadata look-alike (the producer may not import the consumer)."""

    def __init__(self, generation_id: int = 5, member_id: str = "m-1", group_instance_id: str | None = None) -> None:
        self.group_id = GROUP
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id


@pytest.fixture
def h() -> TxnHarness:
    harness = TxnHarness()
    harness.txn.set_poison_state_on_invalid_transition(True)  # the test is the Sender thread
    return harness


def state(h: TxnHarness) -> State:
    """The transaction manager's state, read afresh (each step may move it)."""
    return h.txn.state


def assert_next_transaction_restarts_at_sequence_0(h: TxnHarness, epoch: int) -> None:
    h.txn.begin_transaction()
    h.send_and_add()
    h.produce_ok()
    before = len(h.sent_of(ProduceRequest))
    h.run_until(lambda: len(h.sent_of(ProduceRequest)) == before + 1)
    batch = batches_in(h.sent_of(ProduceRequest)[-1])[TP0]
    assert (batch.producer_epoch, batch.base_sequence) == (epoch, 0)


def in_transaction(h: TxnHarness) -> None:
    h.init_transactions()
    h.txn.begin_transaction()


# --- 75 ---------------------------------------------------------------------------------------------


def test_75_foreground_invalid_state_transition_is_recoverable() -> None:
    h = TxnHarness()  # application thread: no poisoning
    h.init_transactions()
    with pytest.raises(IllegalStateError, match="Invalid transition attempted from state READY to state COMMITTING_TRANSACTION"):
        h.txn.begin_commit()
    assert h.txn.state is State.READY
    h.txn.begin_transaction()
    assert state(h) is State.IN_TRANSACTION


def test_75_background_invalid_state_transition_is_fatal(h: TxnHarness) -> None:
    h.init_transactions()
    with pytest.raises(IllegalStateError):
        h.txn.begin_commit()  # on the I/O thread this is a bug: the manager is poisoned
    assert h.txn.state is State.FATAL_ERROR
    with pytest.raises(KafkaError, match="fatal error state"):
        h.txn.begin_transaction()


# --- 76 ---------------------------------------------------------------------------------------------


def test_76_requests_by_priority_and_end_txn_not_sent_while_batches_incomplete(h: TxnHarness) -> None:
    tm = h.txn
    handlers = [
        EndTxnHandler(tm, True),
        AddPartitionsToTxnHandler(tm, [TP0]),
        InitProducerIdHandler(tm, False),
        FindCoordinatorHandler(tm, TRANSACTION_COORDINATOR, TXN_ID),
    ]
    tm.transaction_started = True  # else the EndTxn would be skipped (statement 84)
    for handler in handlers:
        tm.enqueue(handler)
    order = [tm.next_request(False) for _ in handlers]
    assert [type(x) for x in order] == [FindCoordinatorHandler, InitProducerIdHandler, AddPartitionsToTxnHandler, EndTxnHandler]

    h2 = TxnHarness()
    in_transaction(h2)
    future = h2.send_and_add()[0]
    commit = h2.txn.begin_commit()
    h2.run_once()  # the batch goes out (a completing transaction makes it sendable at once)
    assert isinstance(h2.client.sent[-1].body, ProduceRequest)
    for _ in range(3):
        h2.run_once()
    assert not h2.sent_of(EndTxnRequest), "EndTxn must wait for the transaction's batches"
    h2.client.respond(produce_response({TP0: (0, 7)}))
    h2.client.prepare_response(end_txn_response(), is_end_txn(True))
    h2.run_until(commit.is_completed)
    assert future.result(0).offset == 7
    assert commit.is_successful()
    assert h2.txn.state is State.READY


def test_76_commit_flushes_lingering_batches() -> None:
    h = TxnHarness(linger_ms=60_000)
    in_transaction(h)
    h.send_and_add()
    h.run_once()
    assert not h.sent_of(ProduceRequest), "linger holds the batch before the commit"
    h.produce_ok()
    h.client.prepare_response(end_txn_response(), is_end_txn(True))
    commit = h.txn.begin_commit()
    h.run_until(commit.is_completed)
    assert commit.is_successful() and len(h.sent_of(ProduceRequest)) == 1


# --- 77 ---------------------------------------------------------------------------------------------


def test_77_no_drain_while_partition_pending_in_add_partitions(h: TxnHarness) -> None:
    in_transaction(h)
    h.send(TP0)
    h.run_once()  # AddPartitionsToTxn goes out, unanswered
    assert isinstance(h.client.sent[-1].body, AddPartitionsToTxnRequest)
    assert h.txn.is_partition_pending_add(TP0)
    for _ in range(3):
        h.run_once()
    assert not h.sent_of(ProduceRequest)
    assert not h.txn.is_send_to_partition_allowed(TP0)
    h.client.respond(add_partitions_response({TP0: NONE}))
    h.produce_ok()
    h.run_until(lambda: bool(h.sent_of(ProduceRequest)))
    produce = h.sent_of(ProduceRequest)[0]
    assert produce.transactional_id == TXN_ID
    batch = batches_in(produce)[TP0]
    assert batch.is_transactional and batch.producer_id == PID


# --- 78 ---------------------------------------------------------------------------------------------


def test_78_lookup_coordinator_on_not_coordinator_error(h: TxnHarness) -> None:
    in_transaction(h)
    h.send(TP0)
    h.client.prepare_response(add_partitions_response({TP0: NOT_COORDINATOR}), is_add_partitions)
    h.client.prepare_response(find_coordinator_response(h.node1), is_find_coordinator(1))
    h.client.prepare_response(add_partitions_response({TP0: NONE}), is_add_partitions, node=h.node1)
    h.run_once()  # AddPartitions -> NOT_COORDINATOR
    assert not h.txn.is_partition_added(TP0)
    h.run_once()  # FindCoordinator
    assert h.txn.transaction_coordinator == h.node1
    h.time.sleep(100)  # the retry backoff
    h.run_until(lambda: h.txn.is_partition_added(TP0))
    kinds = [type(b).__name__ for b in h.sent_bodies()[-3:]]
    assert kinds == ["AddPartitionsToTxnRequest", "FindCoordinatorRequest", "AddPartitionsToTxnRequest"]
    assert h.client.sent[-1].destination == h.node1.id_string


def test_78_lookup_coordinator_on_disconnect_after_send(h: TxnHarness) -> None:
    h.client.prepare_response(find_coordinator_response(h.node0), is_find_coordinator(1))
    h.client.prepare_response(init_pid_response(), is_init_pid, disconnected=True)
    h.client.prepare_response(find_coordinator_response(h.node1), is_find_coordinator(1))
    h.client.prepare_response(init_pid_response(), is_init_pid, node=h.node1)
    result = h.txn.initialize_transactions()
    h.run_until(lambda: len(h.sent_of(InitProducerIdRequest)) == 1)  # FindCoordinator, then InitProducerId: disconnected
    assert not result.is_completed(), "the user's result completes only after success"
    assert h.txn.transaction_coordinator is None
    h.run_once()  # FindCoordinator again
    assert h.txn.transaction_coordinator == h.node1
    h.time.sleep(100)
    h.run_until(result.is_completed)
    assert result.is_successful() and h.txn.producer_id_and_epoch() == (PID, 0)


# --- 79 ---------------------------------------------------------------------------------------------


def test_79_concurrent_transactions_on_first_add_partitions_retries_after_20_ms(h: TxnHarness) -> None:
    in_transaction(h)
    h.send(TP0)
    h.client.prepare_response(add_partitions_response({TP0: CONCURRENT_TRANSACTIONS}), is_add_partitions)
    h.run_once()
    h.client.prepare_response(add_partitions_response({TP0: NONE}), is_add_partitions)
    h.time.sleep(19)
    h.run_once()
    assert len(h.sent_of(AddPartitionsToTxnRequest)) == 1, "not before 20 ms"
    h.time.sleep(1)
    h.run_once()
    assert len(h.sent_of(AddPartitionsToTxnRequest)) == 2
    assert h.txn.is_partition_added(TP0)


def test_79_concurrent_transactions_later_in_the_transaction_keeps_the_full_backoff(h: TxnHarness) -> None:
    in_transaction(h)
    h.send_and_add([TP0])
    h.send(TP1)
    h.client.prepare_response(add_partitions_response({TP1: CONCURRENT_TRANSACTIONS}), is_add_partitions)
    h.run_once()
    h.time.sleep(20)
    h.run_once()
    assert len(h.sent_of(AddPartitionsToTxnRequest)) == 2, "retry.backoff.ms (100) applies"


# --- 80 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [PRODUCER_FENCED, INVALID_PRODUCER_EPOCH])
def test_80_fenced_in_init_producer_id_is_fatal(h: TxnHarness, code: int) -> None:
    h.client.prepare_response(find_coordinator_response(h.node0))
    h.client.prepare_response(init_pid_response(code))
    result = h.txn.initialize_transactions()
    h.run_until(result.is_completed)
    assert isinstance(result.error, ProducerFencedError)
    assert h.txn.state is State.FATAL_ERROR
    for call in (h.txn.begin_transaction, h.txn.initialize_transactions, h.txn.begin_abort, h.txn.begin_commit):
        with pytest.raises(ProducerFencedError):
            call()
    with pytest.raises(KafkaError, match="Cannot perform send"):
        h.txn.fail_if_not_ready_for_send()


@pytest.mark.parametrize(
    ("code", "error"),
    [(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TransactionalIdAuthorizationError), (None, UnsupportedVersionError)],
)
def test_other_fatal_init_producer_id_errors(h: TxnHarness, code: int | None, error: type) -> None:
    h.client.prepare_response(find_coordinator_response(h.node0))
    if code is None:
        h.client.prepare_unsupported_version_response(is_init_pid)
    else:
        h.client.prepare_response(init_pid_response(code))
    result = h.txn.initialize_transactions()
    h.run_until(result.is_completed)
    assert isinstance(result.error, error)
    assert h.txn.has_fatal_error()
    for call in (h.txn.begin_transaction, h.txn.begin_abort, h.txn.initialize_transactions):
        with pytest.raises(error, match="fatal error state"):
            call()


def test_fenced_end_txn_fails_the_pending_batches_and_poisons(h: TxnHarness) -> None:
    in_transaction(h)
    h.send_and_add()
    h.produce_ok()
    h.client.prepare_response(end_txn_response(PRODUCER_FENCED), is_end_txn(True))
    commit = h.txn.begin_commit()
    h.run_until(commit.is_completed)
    assert isinstance(commit.error, ProducerFencedError)
    with pytest.raises(ProducerFencedError):
        h.txn.begin_abort()


# --- 81 ---------------------------------------------------------------------------------------------


def _fail_produce(h: TxnHarness) -> None:
    future = h.send_and_add()[0]
    h.client.prepare_response(produce_response({TP0: (INVALID_RECORD, -1)}), is_produce_request)
    h.run_until(future.done)
    assert future.exception(0) is not None
    assert h.txn.state is State.ABORTABLE_ERROR


def is_produce_request(body: object) -> bool:
    return isinstance(body, ProduceRequest)


def test_81_produce_failure_makes_commit_fail_without_end_txn(h: TxnHarness) -> None:
    in_transaction(h)
    _fail_produce(h)
    with pytest.raises(KafkaError, match="call abort_transaction"):
        h.txn.begin_commit()
    for _ in range(3):
        h.run_once()
    assert not h.sent_of(EndTxnRequest)


def test_81_abort_after_produce_failure_bumps_the_epoch_and_the_producer_is_ready_again(h: TxnHarness) -> None:
    in_transaction(h)
    _fail_produce(h)
    h.client.prepare_response(end_txn_response(), is_end_txn(False))
    h.client.prepare_response(init_pid_response(pid=PID, epoch=1), is_init_pid)
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    abort.await_(0)
    bump = h.sent_of(InitProducerIdRequest)[-1]
    assert (bump.producer_id, bump.producer_epoch) == (PID, 0), "the bump names the current id and epoch"
    assert h.txn.state is State.READY and h.txn.producer_id_and_epoch() == (PID, 1)
    # a new transaction works, under the new epoch, from sequence 0
    assert_next_transaction_restarts_at_sequence_0(h, epoch=1)


def test_81_recovery_from_abortable_error_when_transaction_not_started(h: TxnHarness) -> None:
    in_transaction(h)
    h.send(TP0)
    h.client.prepare_response(add_partitions_response({TP0: TRANSACTION_ABORTABLE}), is_add_partitions)
    h.run_once()
    assert h.txn.state is State.ABORTABLE_ERROR and isinstance(h.txn.last_error, TransactionAbortableError)
    with pytest.raises(KafkaError):
        h.txn.begin_commit()
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    assert abort.is_successful() and state(h) is State.READY
    assert not h.sent_of(EndTxnRequest)


# --- 82 ---------------------------------------------------------------------------------------------


def test_82_abort_fails_unsent_batches_with_transaction_aborted_error(h: TxnHarness) -> None:
    in_transaction(h)
    futures = [h.send(TP0), h.send(TP1)]
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    assert abort.is_successful()
    for f in futures:
        assert isinstance(f.exception(0), TransactionAbortedError)
    assert not h.sent_of(ProduceRequest)
    assert not h.accumulator.has_incomplete()


# --- 83 ---------------------------------------------------------------------------------------------


def test_83_commit_retried_after_timeout_returns_the_same_result(h: TxnHarness) -> None:
    in_transaction(h)
    h.send_and_add()
    commit = h.txn.begin_commit()
    with pytest.raises(KafkaTimeoutError):
        commit.await_(0)
    assert h.txn.begin_commit() is commit
    with pytest.raises(IllegalStateError, match="previous call to `commit_transaction` timed out"):
        h.txn.begin_abort()
    with pytest.raises(IllegalStateError, match="timed out and must be retried"):
        h.txn.begin_transaction()
    h.produce_ok()
    h.client.prepare_response(end_txn_response(), is_end_txn(True))
    h.run_until(commit.is_completed)
    assert h.txn.begin_commit() is commit, "not seen by the application yet: still the same result"
    h.txn.begin_commit().await_(0)
    h.txn.begin_transaction()  # acknowledged: the next transaction may start
    assert h.txn.state is State.IN_TRANSACTION
    assert len(h.sent_of(EndTxnRequest)) == 1


# --- 84 ---------------------------------------------------------------------------------------------


def test_84_abort_without_end_txn_when_only_add_partitions_failed(h: TxnHarness) -> None:
    in_transaction(h)
    future = h.send(TP0)
    h.client.prepare_response(add_partitions_response({TP0: TOPIC_AUTHORIZATION_FAILED}), is_add_partitions)
    h.run_once()
    assert isinstance(h.txn.last_error, TopicAuthorizationFailedError)
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    assert abort.is_successful() and h.txn.state is State.READY
    assert not h.sent_of(EndTxnRequest)
    assert isinstance(future.exception(0), TransactionAbortedError)


# --- 85 ---------------------------------------------------------------------------------------------


def test_85_graceful_close_aborts_the_open_transaction(h: TxnHarness) -> None:
    in_transaction(h)
    future = h.send_and_add()[0]
    h.produce_ok()
    h.client.prepare_response(end_txn_response(), is_end_txn(False))
    h.sender.initiate_close()
    h.sender.run()  # the closing loops only: finish the batch, then abort
    assert future.result(0).offset == 0
    assert [b.committed for b in h.sent_of(EndTxnRequest)] == [False]
    assert h.txn.state is State.READY


def test_85_force_close_fails_the_pending_transactional_result(h: TxnHarness) -> None:
    in_transaction(h)
    future = h.send_and_add()[0]
    commit = h.txn.begin_commit()
    h.sender.force_close()
    h.sender.run()
    assert isinstance(commit.error, KafkaError) and "closed forcefully" in str(commit.error)
    assert future.exception(0) is not None


# --- send_offsets_to_transaction ------------------------------------------------------------------------


def test_send_offsets_to_transaction_commits_through_the_group_coordinator(h: TxnHarness) -> None:
    in_transaction(h)
    offsets = {TopicPartition("in", 0): OffsetAndMetadata(42, "meta")}
    result = h.txn.send_offsets_to_transaction(offsets, Group(generation_id=5, member_id="m-1", group_instance_id="i-1"))
    h.client.prepare_response(add_offsets_response(), is_add_offsets)
    h.client.prepare_response(find_coordinator_response(h.node1), is_find_coordinator(GROUP_COORDINATOR))
    h.client.prepare_response(txn_offset_commit_response({TopicPartition("in", 0): NONE}), is_txn_offset_commit, node=h.node1)
    h.run_until(result.is_completed)
    assert result.is_successful()
    commit = h.sent_of(TxnOffsetCommitRequest)[0]
    assert (commit.group_id, commit.generation_id, commit.member_id, commit.group_instance_id) == (GROUP, 5, "m-1", "i-1")
    assert commit.topics[0].partitions[0].committed_offset == 42
    assert h.client.sent[-1].oldest_allowed_version == 3, "KIP-447 group metadata needs v3"
    assert h.sent_of(FindCoordinatorRequest)[-1].key == GROUP
    h.client.prepare_response(end_txn_response(), is_end_txn(True))
    commit_result = h.txn.begin_commit()
    h.run_until(commit_result.is_completed)
    assert commit_result.is_successful(), "the offsets started the transaction: EndTxn is sent"
    assert len(h.sent_of(EndTxnRequest)) == 1


@pytest.mark.parametrize(("code", "error"), [(ILLEGAL_GENERATION, CommitFailedError), (FENCED_INSTANCE_ID, FencedInstanceIdError)])
def test_send_offsets_with_stale_generation_or_fenced_instance_is_abortable(h: TxnHarness, code: int, error: type) -> None:
    in_transaction(h)
    tp = TopicPartition("in", 0)
    result = h.txn.send_offsets_to_transaction({tp: OffsetAndMetadata(1)}, Group())
    h.client.prepare_response(add_offsets_response(), is_add_offsets)
    h.client.prepare_response(find_coordinator_response(h.node1), is_find_coordinator(GROUP_COORDINATOR))
    h.client.prepare_response(txn_offset_commit_response({tp: code}), is_txn_offset_commit)
    h.run_until(result.is_completed)
    assert isinstance(result.error, error)
    assert h.txn.state is State.ABORTABLE_ERROR
    h.client.prepare_response(end_txn_response(), is_end_txn(False))
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    assert abort.is_successful() and state(h) is State.READY


def test_send_offsets_outside_a_transaction_raises(h: TxnHarness) -> None:
    h.init_transactions()
    with pytest.raises(IllegalStateError, match="transaction is not in progress"):
        h.txn.send_offsets_to_transaction({TP0: OffsetAndMetadata(1)}, Group())


# --- bad input and misuse ---------------------------------------------------------------------------------


def test_send_outside_a_transaction_raises(h: TxnHarness) -> None:
    with pytest.raises(IllegalStateError, match="before completing a call to init_transactions"):
        h.txn.fail_if_not_ready_for_send()
    h.init_transactions()
    with pytest.raises(IllegalStateError, match="not in a transaction"):
        h.txn.fail_if_not_ready_for_send()
    with pytest.raises(IllegalStateError, match="while in state READY"):
        h.txn.maybe_add_partition(TP0)


def test_commit_without_begin_raises_and_changes_nothing() -> None:
    h = TxnHarness()
    h.init_transactions()
    with pytest.raises(IllegalStateError, match="READY to state COMMITTING_TRANSACTION"):
        h.txn.begin_commit()
    with pytest.raises(IllegalStateError, match="READY to state ABORTING_TRANSACTION"):
        h.txn.begin_abort()
    assert h.txn.state is State.READY


def test_transactional_calls_on_an_idempotent_manager_raise() -> None:
    from tests.unit.producer.sender_harness import Harness

    tm = Harness(idempotent=True).tm
    assert tm is not None
    for call in (tm.initialize_transactions, tm.begin_commit, tm.begin_abort, tm.begin_transaction):
        with pytest.raises(IllegalStateError, match="non-transactional producer"):
            call()


# --- EndTxn and AddOffsetsToTxn errors ------------------------------------------------------------------


def _commit_with(h: TxnHarness, *end_txn_codes: int) -> TransactionalRequestResult:
    in_transaction(h)
    h.send_and_add()
    h.produce_ok()
    for code in end_txn_codes:
        h.client.prepare_response(end_txn_response(code), is_end_txn(True))
    return h.txn.begin_commit()


def test_end_txn_concurrent_transactions_is_retried_after_the_backoff(h: TxnHarness) -> None:
    commit = _commit_with(h, CONCURRENT_TRANSACTIONS, NONE)
    h.run_until(lambda: len(h.sent_of(EndTxnRequest)) == 1)
    h.run_once()
    assert len(h.sent_of(EndTxnRequest)) == 1, "waits retry.backoff.ms"
    h.time.sleep(100)
    h.run_until(commit.is_completed)
    assert commit.is_successful() and len(h.sent_of(EndTxnRequest)) == 2


def test_end_txn_not_coordinator_finds_it_again(h: TxnHarness) -> None:
    commit = _commit_with(h, COORDINATOR_NOT_AVAILABLE)
    h.run_until(lambda: len(h.sent_of(EndTxnRequest)) == 1)
    h.client.prepare_response(find_coordinator_response(h.node1), is_find_coordinator(1))
    h.client.prepare_response(end_txn_response(), is_end_txn(True), node=h.node1)
    h.time.sleep(100)
    h.run_until(commit.is_completed)
    assert commit.is_successful()
    assert h.client.sent[-1].destination == h.node1.id_string


def test_end_txn_transaction_abortable_fails_the_commit_and_abort_recovers(h: TxnHarness) -> None:
    commit = _commit_with(h, TRANSACTION_ABORTABLE)
    h.run_until(commit.is_completed)
    assert isinstance(commit.error, TransactionAbortableError)
    assert h.txn.state is State.ABORTABLE_ERROR
    with pytest.raises(TransactionAbortableError):
        commit.await_(0)
    h.client.prepare_response(end_txn_response(), is_end_txn(False))
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    assert abort.is_successful() and state(h) is State.READY


def test_add_offsets_fenced_is_fatal(h: TxnHarness) -> None:
    in_transaction(h)
    result = h.txn.send_offsets_to_transaction({TP0: OffsetAndMetadata(1)}, Group())
    h.client.prepare_response(add_offsets_response(PRODUCER_FENCED), is_add_offsets)
    h.run_until(result.is_completed)
    assert isinstance(result.error, ProducerFencedError)
    assert h.txn.has_fatal_error()


def test_abort_of_a_batch_waiting_for_its_retry_bumps_the_epoch(h: TxnHarness) -> None:
    """The retried batch holds sequence numbers the broker never acknowledged: without a bump the next
    transaction's first batch would leave a gap (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    in_transaction(h)
    future = h.send_and_add()[0]
    h.client.prepare_response(produce_response({TP0: (6, -1)}), is_produce_request)  # NOT_LEADER_OR_FOLLOWER
    h.run_until(lambda: len(h.sent_of(ProduceRequest)) == 1 and h.accumulator.batches_for(TP0) != [])  # re-enqueued
    h.client.prepare_response(end_txn_response(), is_end_txn(False))
    h.client.prepare_response(init_pid_response(epoch=1), is_init_pid)
    abort = h.txn.begin_abort()
    h.run_until(abort.is_completed)
    assert abort.is_successful()
    assert isinstance(future.exception(0), TransactionAbortedError)
    assert h.txn.producer_id_and_epoch() == (PID, 1)
    abort.await_(0)
    assert_next_transaction_restarts_at_sequence_0(h, epoch=1)


def test_unreachable_coordinator_is_looked_up_again(h: TxnHarness) -> None:
    in_transaction(h)
    h.client.set_unreachable(h.node0, 10_000)
    h.send(TP0)
    h.client.prepare_response(find_coordinator_response(h.node1), is_find_coordinator(1), node=h.node1)
    h.client.prepare_response(add_partitions_response({TP0: NONE}), is_add_partitions, node=h.node1)
    h.run_until(lambda: h.txn.is_partition_added(TP0))
    assert h.txn.transaction_coordinator == h.node1
    assert h.client.sent[-1].destination == h.node1.id_string


def test_83_abort_retried_after_timeout_returns_the_same_result(h: TxnHarness) -> None:
    in_transaction(h)
    h.send_and_add()
    h.produce_ok()
    h.run_until(lambda: not h.accumulator.has_incomplete())
    abort = h.txn.begin_abort()
    with pytest.raises(KafkaTimeoutError):
        abort.await_(0)
    assert h.txn.begin_abort() is abort
    with pytest.raises(IllegalStateError, match="previous call to `abort_transaction` timed out"):
        h.txn.begin_commit()
    h.client.prepare_response(end_txn_response(), is_end_txn(False))
    h.run_until(abort.is_completed)
    h.txn.begin_abort().await_(0)
    assert h.txn.state is State.READY and len(h.sent_of(EndTxnRequest)) == 1
