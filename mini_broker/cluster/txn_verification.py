"""KIP-890 verification asked of a remote transaction coordinator (Kafka: ``AddPartitionsToTxnManager``).

A partition leader that receives a producer's first transactional batch for a partition asks the
transaction coordinator of the producer's transactional id whether that partition is in the ongoing
transaction. When the coordinator lives on another broker, the question is a verify-only AddPartitionsToTxn
(v5, ``verify_only=true``) sent over an inter-broker connection. The produce request waits without a handler
thread: :meth:`TxnVerificationManager.verify` queues the question and returns; one sender thread per
coordinator broker drains its queue, puts the waiting questions with distinct transactional ids into one
request (Kafka batches per node the same way), and calls each question's callback with the error per
partition. An unreachable or moving coordinator (connection error, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS) answers
NOT_ENOUGH_REPLICAS, which producers retry, as Kafka does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mini_broker.cluster.broker_connection import BrokerConnection, BrokerDirectory
from pykafka_client.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NetworkError,
    NotCoordinatorError,
    NotEnoughReplicasError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from pykafka_client.structs import TopicPartition

log = logging.getLogger(__name__)

ADD_PARTITIONS_TO_TXN_VERSION = 5
REQUEST_TIMEOUT_S = 30.0

#: coordinator answers that mean "ask again later": the producer sees NOT_ENOUGH_REPLICAS and retries
_RETRIABLE = frozenset({NotCoordinatorError.code, CoordinatorNotAvailableError.code,
                        CoordinatorLoadInProgressError.code, ConcurrentTransactionsError.code, NetworkError.code})

Done = Callable[[dict[TopicPartition, int]], None]


def retriable_as_not_enough_replicas(errors: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    return {tp: NotEnoughReplicasError.code if e in _RETRIABLE else e for tp, e in errors.items()}


@dataclass
class Verification:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    done: Done


def split_batch(queue: Sequence[Verification]) -> tuple[list[Verification], list[Verification]]:
    """(the next request's questions: the first of each transactional id, in order; the rest, still queued)"""
    batch: list[Verification] = []
    rest: list[Verification] = []
    ids: set[str] = set()
    for v in queue:
        (rest if v.transactional_id in ids else batch).append(v)
        ids.add(v.transactional_id)
    return batch, rest


def request_for(batch: Sequence[Verification]) -> AddPartitionsToTxnRequest:
    R = AddPartitionsToTxnRequest
    txns = []
    for v in batch:
        topics: dict[str, list[int]] = {}
        for tp in v.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        txns.append(R.AddPartitionsToTxnTransaction(
            transactional_id=v.transactional_id, producer_id=v.producer_id, producer_epoch=v.producer_epoch,
            verify_only=True, topics=[R.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()]))
    return R(transactions=txns)


def answers_of(batch: Sequence[Verification], resp: AddPartitionsToTxnResponse) -> list[dict[TopicPartition, int]]:
    """The error per partition of each question of ``batch`` (a partition the coordinator did not answer:
    NOT_ENOUGH_REPLICAS, retried; coordinator errors that mean "later" too)."""
    by_txn = {r.transactional_id: {TopicPartition(t.name, p.partition_index): p.partition_error_code
                                   for t in r.topic_results for p in t.results_by_partition}
              for r in resp.results_by_transaction}
    out = []
    for v in batch:
        if resp.error_code != 0:
            errors = {tp: resp.error_code for tp in v.partitions}
        else:
            answered = by_txn.get(v.transactional_id, {})
            errors = {tp: answered.get(tp, NotEnoughReplicasError.code) for tp in v.partitions}
        out.append(retriable_as_not_enough_replicas(errors))
    return out


class _Sender:
    """The queue and thread of one coordinator broker."""

    def __init__(self, cluster: BrokerDirectory, broker_id: int) -> None:
        self.broker_id = broker_id
        self._cond = threading.Condition()
        self._queue: list[Verification] = []
        self._stopped = False
        self._conn = BrokerConnection(lambda: cluster.broker_endpoint(broker_id),
                                      f"broker-{cluster.broker_id}-txn-verification", cluster.inter_broker_security)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"txn-verification-{cluster.broker_id}-{broker_id}")
        self._thread.start()

    def enqueue(self, v: Verification) -> bool:
        with self._cond:
            if self._stopped:
                return False
            self._queue.append(v)
            self._cond.notify()
        return True

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._conn.close()
        self._thread.join(timeout=5)

    def _next_batch(self) -> list[Verification] | None:
        """Waiting questions with distinct transactional ids (the rest stay queued), None when stopped."""
        with self._cond:
            while not self._queue and not self._stopped:
                self._cond.wait()
            if self._stopped:
                pending, self._queue = self._queue, []
                for v in pending:
                    v.done({tp: NotEnoughReplicasError.code for tp in v.partitions})
                return None
            batch, self._queue = split_batch(self._queue)
            return batch

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            try:
                resp = self._conn.send_and_receive(request_for(batch), ADD_PARTITIONS_TO_TXN_VERSION, REQUEST_TIMEOUT_S)
                assert isinstance(resp, AddPartitionsToTxnResponse)
                answers = answers_of(batch, resp)
            except (OSError, KafkaError) as e:
                log.warning("event=txn_verification_failed coordinator=%d error=%r msg=\"the produce is answered "
                            "NOT_ENOUGH_REPLICAS and the producer retries\"", self.broker_id, e)
                answers = [{tp: NotEnoughReplicasError.code for tp in v.partitions} for v in batch]
            for v, errors in zip(batch, answers, strict=True):
                try:
                    v.done(errors)
                except Exception:
                    log.exception("event=txn_verification_callback_failed transactional_id=%s", v.transactional_id)


class TxnVerificationManager:
    def __init__(self, cluster: BrokerDirectory) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._senders: dict[int, _Sender] = {}
        self._stopped = False

    def verify(self, coordinator_id: int, transactional_id: str, producer_id: int, producer_epoch: int,
               partitions: list[TopicPartition], done: Done) -> None:
        """Ask broker ``coordinator_id``; ``done`` is called later, from its sender thread."""
        v = Verification(transactional_id, producer_id, producer_epoch, partitions, done)
        with self._lock:
            sender = None if self._stopped else self._senders.get(coordinator_id)
            if sender is None and not self._stopped:
                sender = self._senders[coordinator_id] = _Sender(self._cluster, coordinator_id)
        if sender is None or not sender.enqueue(v):
            done({tp: NotEnoughReplicasError.code for tp in partitions})

    def shutdown(self) -> None:
        with self._lock:
            self._stopped = True
            senders = list(self._senders.values())
            self._senders.clear()
        for s in senders:
            s.shutdown()
