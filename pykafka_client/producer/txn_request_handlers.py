"""The transactional requests and what each response does to the TransactionManager (Java's
``TransactionManager.TxnRequestHandler`` subclasses).

Each handler builds its request when it is sent (so a bumped epoch is used), names the coordinator it
goes to (None: any broker) and its queue priority, and handles the response on the Sender thread:

====================  ========  ===========  ==================================================================
request               priority  coordinator  versions
====================  ========  ===========  ==================================================================
FindCoordinator       0         any broker   single-key form (v0-3); key type TRANSACTION needs v1+
InitProducerId        1         transaction  all; an epoch bump (producer id/epoch set) needs v3+
AddPartitionsToTxn    2         transaction  v0-3, the client form (v4+ is the broker-to-broker batch)
AddOffsetsToTxn       2         transaction  all
TxnOffsetCommit       2         group        all; with KIP-447 group metadata v3+
EndTxn                3         transaction  v0-4 (v5 bumps the epoch per transaction, KIP-890 part 2)
====================  ========  ===========  ==================================================================

Error handling is Java's: NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE (and a disconnect) look the
coordinator up again and retry; other retriable errors retry after ``retry.backoff.ms`` (20 ms for the
first AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS, statement 79); PRODUCER_FENCED and
INVALID_PRODUCER_EPOCH (as ProducerFencedError), TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_TXN_STATE
and anything unexpected are fatal; TRANSACTION_ABORTABLE, group and topic authorization failures,
UNKNOWN_PRODUCER_ID and consumer group mismatches are abortable.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from pykafka_client.errors import (
    CommitFailedError,
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    IllegalGenerationError,
    InvalidPidMappingError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotCoordinatorError,
    OperationNotAttemptedError,
    ProducerFencedError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationError,
    UnknownMemberIdError,
    UnknownProducerIdError,
    UnsupportedForMessageFormatError,
    for_code,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.producer.transactional_request_result import TransactionalRequestResult
from pykafka_client.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import Time

log = logging.getLogger(__name__)


class GroupMetadata(Protocol):
    """What ``send_offsets_to_transaction`` needs of a consumer's group (``ConsumerGroupMetadata``, KIP-447)."""

    @property
    def group_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...
    @property
    def member_id(self) -> str: ...
    @property
    def group_instance_id(self) -> str | None: ...


#: FindCoordinator key types
GROUP_COORDINATOR = 0
TRANSACTION_COORDINATOR = 1


class TxnContext(Protocol):
    """What a handler reads and changes of the transaction manager (Java: the TransactionManager fields an
    inner TxnRequestHandler uses). ``handle_response`` runs under ``lock``."""

    lock: threading.RLock
    time: Time
    transactional_id: str | None
    transaction_timeout_ms: int
    retry_backoff_ms: int
    txn_epoch_bump_required: bool
    transaction_started: bool
    in_flight_handler: TxnRequestHandler | None
    transaction_coordinator: Node | None
    group_coordinator: Node | None
    partitions_in_transaction: set[TopicPartition]
    pending_partitions_in_transaction: set[TopicPartition]
    pending_txn_offset_commits: dict[TopicPartition, OffsetAndMetadata]

    def enqueue(self, handler: TxnRequestHandler) -> None: ...

    def lookup_coordinator(self, coordinator_type: int, key: str) -> None: ...

    def producer_id_and_epoch(self) -> tuple[int, int]: ...

    def set_producer_id_and_epoch_for_transaction(self, producer_id: int, epoch: int) -> None: ...

    def complete_transaction(self, result: TransactionalRequestResult) -> None: ...

    def transition_to_fatal_error(self, exc: BaseException) -> None: ...

    def transition_to_abortable_error(self, exc: BaseException) -> None: ...

FIND_COORDINATOR_PRIORITY = 0
INIT_PRODUCER_ID_PRIORITY = 1
ADD_PARTITIONS_OR_OFFSETS_PRIORITY = 2
END_TXN_PRIORITY = 3
#: retry backoff of the first AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS (Java's KAFKA-5482 fix)
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20

_COORDINATOR_MOVED = (NotCoordinatorError.code, CoordinatorNotAvailableError.code)
_FENCED = (InvalidProducerEpochError.code, ProducerFencedError.code)


def _fenced() -> ProducerFencedError:
    return ProducerFencedError(
        "There is a newer producer with the same transactional.id which fences this one; close this producer"
    )


class TxnRequestHandler:
    """One queued transactional request; its ``result`` is what the application waits on."""

    priority = ADD_PARTITIONS_OR_OFFSETS_PRIORITY
    #: the coordinator it goes to (GROUP_COORDINATOR / TRANSACTION_COORDINATOR), None for any broker
    coordinator_type: int | None = TRANSACTION_COORDINATOR
    operation = "transactional request"

    def __init__(self, tm: TxnContext, result: TransactionalRequestResult | None = None) -> None:
        self.tm = tm
        self.result = result if result is not None else TransactionalRequestResult(self.operation)
        self.is_retry = False
        self.retry_backoff_ms = tm.retry_backoff_ms
        self.retry_at_ms = 0

    def coordinator_key(self) -> str:
        assert self.tm.transactional_id is not None
        return self.tm.transactional_id

    def build(self) -> tuple[Any, int | None, int | None]:
        """(request body, oldest allowed version, latest allowed version)."""
        raise NotImplementedError

    def handle_response(self, body: Any) -> None:
        raise NotImplementedError

    # --- outcomes --------------------------------------------------------------------------------------

    def fatal_error(self, exc: BaseException) -> None:
        self.result.fail(exc)
        self.tm.transition_to_fatal_error(exc)

    def abortable_error(self, exc: BaseException) -> None:
        self.result.fail(exc)
        self.tm.transition_to_abortable_error(exc)

    def abortable_error_if_possible(self, exc: BaseException) -> None:
        """The coordinator lost our producer id: abortable, the abort bumping the epoch."""
        self.tm.txn_epoch_bump_required = True
        self.abortable_error(exc)

    def reenqueue(self) -> None:
        """Send again after the retry backoff."""
        self.is_retry = True
        self.retry_at_ms = self.tm.time.hi_res_clock_ms() + self.retry_backoff_ms
        self.tm.enqueue(self)

    def coordinator_moved(self) -> None:
        assert self.coordinator_type is not None
        self.tm.lookup_coordinator(self.coordinator_type, self.coordinator_key())
        self.reenqueue()

    def on_complete(self, response: ClientResponse) -> None:
        """The request's completion handler, on the Sender thread."""
        tm = self.tm
        tm.in_flight_handler = None
        if response.was_disconnected:
            log.debug("%s: disconnected from %s, retrying", self.operation, response.destination)
            if self.coordinator_type is not None:
                self.coordinator_moved()
            else:
                self.reenqueue()
        elif response.version_mismatch is not None:
            self.fatal_error(response.version_mismatch)
        elif response.response_body is not None:
            with tm.lock:
                self.handle_response(response.response_body)
        else:
            self.fatal_error(KafkaError(f"Could not execute {self.operation} for unknown reasons (no response)"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(retry={self.is_retry})"


class FindCoordinatorHandler(TxnRequestHandler):
    priority = FIND_COORDINATOR_PRIORITY
    coordinator_type = None
    operation = "FindCoordinator"

    def __init__(self, tm: TxnContext, key_type: int, key: str) -> None:
        super().__init__(tm)
        self.key_type = key_type
        self.key = key

    def build(self) -> tuple[Any, int | None, int | None]:
        return FindCoordinatorRequest(key=self.key, key_type=self.key_type), (1 if self.key_type else None), 3

    def handle_response(self, body: FindCoordinatorResponse) -> None:
        err, node_id, host, port = body.error_code, body.node_id, body.host, body.port
        if body.coordinators:
            c = body.coordinators[0]
            err, node_id, host, port = c.error_code, c.node_id, c.host, c.port
        kind = "transaction" if self.key_type == TRANSACTION_COORDINATOR else "group"
        if err == 0:
            node = Node(node_id, host, port)
            if self.key_type == TRANSACTION_COORDINATOR:
                self.tm.transaction_coordinator = node
            else:
                self.tm.group_coordinator = node
            log.info("discovered %s coordinator %s for %s", kind, node, self.key)
            self.result.done()
            return
        exc_cls = for_code(err)
        if exc_cls.retriable:
            self.reenqueue()
        elif err == TransactionalIdAuthorizationError.code:
            self.fatal_error(TransactionalIdAuthorizationError(f"not authorized to use transactional.id {self.key}"))
        elif err == GroupAuthorizationFailedError.code:
            self.abortable_error(GroupAuthorizationFailedError(f"not authorized to access group {self.key}"))
        else:
            self.fatal_error(
                KafkaError(f"Could not find a {kind} coordinator for {self.key} due to unexpected error {exc_cls.__name__}")
            )


class InitProducerIdHandler(TxnRequestHandler):
    priority = INIT_PRODUCER_ID_PRIORITY
    operation = "InitProducerId"

    def __init__(self, tm: TxnContext, bump: bool, result: TransactionalRequestResult | None = None) -> None:
        super().__init__(tm, result)
        self.bump = bump

    def build(self) -> tuple[Any, int | None, int | None]:
        pid, epoch = self.tm.producer_id_and_epoch() if self.bump else (-1, -1)
        body = InitProducerIdRequest(
            transactional_id=self.tm.transactional_id,
            transaction_timeout_ms=self.tm.transaction_timeout_ms,
            producer_id=pid,
            producer_epoch=epoch,
        )
        return body, (3 if self.bump else None), None

    def handle_response(self, body: InitProducerIdResponse) -> None:
        err = body.error_code
        if err == 0:
            self.tm.set_producer_id_and_epoch_for_transaction(body.producer_id, body.producer_epoch)
            self.result.done()
        elif err in _COORDINATOR_MOVED:
            self.coordinator_moved()
        elif for_code(err).retriable:
            self.reenqueue()
        elif err in _FENCED:
            self.fatal_error(_fenced())
        elif err == TransactionalIdAuthorizationError.code:
            self.fatal_error(TransactionalIdAuthorizationError(f"not authorized to use transactional.id {self.tm.transactional_id}"))
        elif err == TransactionAbortableError.code:
            self.abortable_error(TransactionAbortableError(None))
        else:
            self.fatal_error(KafkaError(f"Unexpected error in InitProducerIdResponse: {for_code(err).__name__}"))


class AddPartitionsToTxnHandler(TxnRequestHandler):
    operation = "AddPartitionsToTxn"

    def __init__(self, tm: TxnContext, partitions: list[TopicPartition]) -> None:
        super().__init__(tm)
        self.partitions = partitions

    def build(self) -> tuple[Any, int | None, int | None]:
        pid, epoch = self.tm.producer_id_and_epoch()
        topics: dict[str, list[int]] = {}
        for tp in self.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.coordinator_key(),
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in topics.items()],
        )
        return body, None, 3

    def handle_response(self, body: AddPartitionsToTxnResponse) -> None:
        tm = self.tm
        errors: dict[TopicPartition, int] = {}
        for topic in body.results_by_topic_v3_and_below:
            for p in topic.results_by_partition:
                errors[TopicPartition(topic.name, p.partition_index)] = p.partition_error_code
        unauthorized: set[str] = set()
        partition_errors = False
        self.retry_backoff_ms = tm.retry_backoff_ms
        for tp, err in errors.items():
            if err == 0:
                continue
            if err in _COORDINATOR_MOVED:
                self.coordinator_moved()
                return
            if err == ConcurrentTransactionsError.code:
                if not tm.partitions_in_transaction:
                    # the previous transaction is still completing: try again soon, not after a full backoff
                    self.retry_backoff_ms = ADD_PARTITIONS_RETRY_BACKOFF_MS
                self.reenqueue()
                return
            if for_code(err).retriable:
                self.reenqueue()
                return
            if err in _FENCED:
                self.fatal_error(_fenced())
                return
            if err in (TransactionalIdAuthorizationError.code, InvalidTxnStateError.code):
                self.fatal_error(for_code(err)(f"AddPartitionsToTxn for {tp}"))
                return
            if err == TopicAuthorizationFailedError.code:
                unauthorized.add(tp.topic)
            elif err == OperationNotAttemptedError.code:
                partition_errors = True  # another partition of the request failed
            elif err in (UnknownProducerIdError.code, InvalidPidMappingError.code):
                self.abortable_error_if_possible(for_code(err)(f"AddPartitionsToTxn for {tp}"))
                return
            elif err == TransactionAbortableError.code:
                self.abortable_error(TransactionAbortableError(f"AddPartitionsToTxn for {tp}"))
                return
            else:
                log.error("could not add partition %s to the transaction: %s", tp, for_code(err).__name__)
                partition_errors = True
        # No longer pending whatever the outcome: on an error the batches are aborted anyway, and batches
        # being retried for partitions that were added must still be sendable.
        tm.pending_partitions_in_transaction.difference_update(errors)
        if unauthorized:
            self.abortable_error(TopicAuthorizationFailedError(f"Not authorized to access topics: {sorted(unauthorized)}"))
        elif partition_errors:
            named = {str(tp): for_code(e).__name__ for tp, e in errors.items() if e}
            self.abortable_error(KafkaError(f"Could not add partitions to transaction due to errors: {named}"))
        else:
            log.debug("added partitions %s to the transaction", sorted(errors))
            tm.partitions_in_transaction.update(errors)
            tm.transaction_started = True
            self.result.done()


class AddOffsetsToTxnHandler(TxnRequestHandler):
    operation = "AddOffsetsToTxn"

    def __init__(
        self, tm: TxnContext, offsets: dict[TopicPartition, OffsetAndMetadata], group: GroupMetadata
    ) -> None:
        super().__init__(tm, TransactionalRequestResult("send_offsets_to_transaction"))
        self.offsets = offsets
        self.group = group

    def build(self) -> tuple[Any, int | None, int | None]:
        pid, epoch = self.tm.producer_id_and_epoch()
        body = AddOffsetsToTxnRequest(
            transactional_id=self.coordinator_key(), producer_id=pid, producer_epoch=epoch, group_id=self.group.group_id
        )
        return body, None, None

    def handle_response(self, body: AddOffsetsToTxnResponse) -> None:
        err = body.error_code
        group_id = self.group.group_id
        if err == 0:
            log.debug("added the offsets of group %s to the transaction", group_id)
            self.tm.transaction_started = True
            # the result completes when the TxnOffsetCommit does
            self.tm.enqueue(TxnOffsetCommitHandler(self.tm, self.result, self.offsets, self.group))
        elif err in _COORDINATOR_MOVED:
            self.coordinator_moved()
        elif for_code(err).retriable:
            self.reenqueue()
        elif err in (UnknownProducerIdError.code, InvalidPidMappingError.code):
            self.abortable_error_if_possible(for_code(err)("AddOffsetsToTxn"))
        elif err in _FENCED:
            self.fatal_error(_fenced())
        elif err == TransactionalIdAuthorizationError.code:
            self.fatal_error(TransactionalIdAuthorizationError(f"not authorized to use transactional.id {self.tm.transactional_id}"))
        elif err == GroupAuthorizationFailedError.code:
            self.abortable_error(GroupAuthorizationFailedError(f"not authorized to access group {group_id}"))
        elif err == TransactionAbortableError.code:
            self.abortable_error(TransactionAbortableError("AddOffsetsToTxn"))
        else:
            self.fatal_error(KafkaError(f"Unexpected error in AddOffsetsToTxnResponse: {for_code(err).__name__}"))


def _has_group_metadata(group: GroupMetadata) -> bool:
    return group.generation_id != -1 or group.member_id != "" or group.group_instance_id is not None


class TxnOffsetCommitHandler(TxnRequestHandler):
    coordinator_type = GROUP_COORDINATOR
    operation = "TxnOffsetCommit"

    def __init__(
        self,
        tm: TxnContext,
        result: TransactionalRequestResult,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        group: GroupMetadata,
    ) -> None:
        super().__init__(tm, result)
        self.group = group
        tm.pending_txn_offset_commits.update(offsets)

    def coordinator_key(self) -> str:
        return self.group.group_id

    def build(self) -> tuple[Any, int | None, int | None]:
        pid, epoch = self.tm.producer_id_and_epoch()
        topics: dict[str, list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]] = {}
        for tp, om in sorted(self.tm.pending_txn_offset_commits.items()):
            topics.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=om.offset,
                    committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                    committed_metadata=om.metadata,
                )
            )
        g = self.group
        body = TxnOffsetCommitRequest(
            transactional_id=self.tm.transactional_id or "",
            group_id=g.group_id,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=g.generation_id,
            member_id=g.member_id,
            group_instance_id=g.group_instance_id,
            topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        # KIP-447: the group's generation and member exist from v3; a broker below cannot fence zombies
        return body, (3 if _has_group_metadata(g) else None), None

    def handle_response(self, body: TxnOffsetCommitResponse) -> None:
        tm = self.tm
        group_id = self.group.group_id
        looked_up = False
        for topic in body.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                err = p.error_code
                if err == 0:
                    tm.pending_txn_offset_commits.pop(tp, None)
                elif err in _COORDINATOR_MOVED or err == RequestTimedOutError.code:
                    if not looked_up:
                        looked_up = True
                        tm.lookup_coordinator(GROUP_COORDINATOR, group_id)
                elif for_code(err).retriable:
                    continue  # unknown topic, coordinator loading: retry with the same coordinator
                elif err == GroupAuthorizationFailedError.code:
                    self.abortable_error(GroupAuthorizationFailedError(f"not authorized to access group {group_id}"))
                    break
                elif err in (UnknownMemberIdError.code, IllegalGenerationError.code):
                    self.abortable_error(
                        CommitFailedError(
                            "Transaction offset commit failed due to consumer group metadata mismatch: "
                            f"{for_code(err).__name__} (the group rebalanced; abort the transaction)"
                        )
                    )
                    break
                elif err in (TransactionAbortableError.code, FencedInstanceIdError.code):
                    self.abortable_error(for_code(err)(f"TxnOffsetCommit for group {group_id}"))
                    break
                elif err in (*_FENCED, TransactionalIdAuthorizationError.code, UnsupportedForMessageFormatError.code):
                    self.fatal_error(_fenced() if err in _FENCED else for_code(err)(f"TxnOffsetCommit for group {group_id}"))
                    break
                else:
                    self.fatal_error(KafkaError(f"Unexpected error in TxnOffsetCommitResponse: {for_code(err).__name__}"))
                    break
        if self.result.is_completed():
            tm.pending_txn_offset_commits.clear()
        elif not tm.pending_txn_offset_commits:
            self.result.done()
        else:
            self.reenqueue()  # the partitions that failed with a retriable error


class EndTxnHandler(TxnRequestHandler):
    priority = END_TXN_PRIORITY

    def __init__(self, tm: TxnContext, committed: bool) -> None:
        self.committed = committed
        self.operation = f"EndTxn({'commit' if committed else 'abort'})"
        super().__init__(tm)

    def build(self) -> tuple[Any, int | None, int | None]:
        pid, epoch = self.tm.producer_id_and_epoch()
        body = EndTxnRequest(
            transactional_id=self.coordinator_key(), producer_id=pid, producer_epoch=epoch, committed=self.committed
        )
        return body, None, 4

    def handle_response(self, body: EndTxnResponse) -> None:
        err = body.error_code
        if err == 0:
            self.tm.complete_transaction(self.result)
        elif err in _COORDINATOR_MOVED:
            self.coordinator_moved()
        elif for_code(err).retriable:
            self.reenqueue()
        elif err in _FENCED:
            self.fatal_error(_fenced())
        elif err in (TransactionalIdAuthorizationError.code, InvalidTxnStateError.code):
            self.fatal_error(for_code(err)(f"{self.operation} for transactional.id {self.tm.transactional_id}"))
        elif err in (UnknownProducerIdError.code, InvalidPidMappingError.code):
            self.abortable_error_if_possible(for_code(err)(self.operation))
        elif err == TransactionAbortableError.code:
            self.abortable_error(TransactionAbortableError(self.operation))
        else:
            self.fatal_error(KafkaError(f"Unhandled error in EndTxnResponse: {for_code(err).__name__}"))
