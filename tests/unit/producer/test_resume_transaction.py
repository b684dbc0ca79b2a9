"""``TransactionManager.resume_transaction`` (the hook the Spark exactly-once sink's driver uses, as Flink's
Kafka sink does with Java's producer): a fresh manager adopts a producer id and epoch without InitProducerId,
is in a started transaction, and its commit/abort queues an EndTxn carrying exactly that id and epoch."""

from __future__ import annotations

import pytest

from pykafka_client.errors import IllegalStateError
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.producer.transaction_state import State
from pykafka_client.producer.txn_request_handlers import EndTxnHandler, InitProducerIdHandler
from pykafka_client.utils.time import MockTime


def _manager() -> TransactionManager:
    return TransactionManager("spark-task-3", time=MockTime())


@pytest.mark.parametrize("commit", [True, False])
def test_resumed_transaction_ends_with_the_given_producer_id_and_epoch(commit: bool) -> None:
    tm = _manager()
    tm.resume_transaction(4242, 7)
    assert tm.state is State.IN_TRANSACTION and tm.transaction_started
    assert tm.producer_id_and_epoch() == (4242, 7)
    tm.begin_commit() if commit else tm.begin_abort()
    handler = tm.next_request(has_incomplete_batches=False)
    assert isinstance(handler, EndTxnHandler) and handler.committed is commit  # not skipped, no InitProducerId
    body, _, _ = handler.build()
    assert (body.producer_id, body.producer_epoch, body.committed) == (4242, 7, commit)


def test_resume_only_on_a_fresh_manager() -> None:
    tm = _manager()
    tm.initialize_transactions()
    assert isinstance(tm.next_request(False), InitProducerIdHandler)
    with pytest.raises(IllegalStateError, match="fresh producer"):
        tm.resume_transaction(1, 0)
    with pytest.raises(IllegalStateError, match="invalid producer id"):
        _manager().resume_transaction(-1, 0)
    with pytest.raises(IllegalStateError, match="non-transactional"):
        TransactionManager(None, time=MockTime()).resume_transaction(1, 0)
