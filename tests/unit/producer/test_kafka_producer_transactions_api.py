"""The transactional producer API's checks that need no broker: configuration, misuse, bad input."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.errors import (
    ConfigurationError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaTimeoutError,
    ProducerClosedError,
)
from pykafka_client.producer.transaction_state import State
from pykafka_client.structs import TopicPartition
from tests.unit.producer.test_kafka_producer_api import closed_port
from tests.unit.producer.test_transactions import Group


@pytest.fixture
def txn_producer() -> Iterator[KafkaProducer]:
    p = KafkaProducer({"bootstrap.servers": closed_port(), "max.block.ms": 0, "transactional.id": "tid"})
    try:
        yield p
    finally:
        p.close(0)


def test_transactional_id_enables_idempotence_and_passes_its_timeout() -> None:
    p = KafkaProducer(bootstrap_servers=closed_port(), transactional_id="tid", transaction_timeout_ms=5000)
    try:
        assert p.transaction_manager is not None
        assert p.transaction_manager.transactional_id == "tid"
        assert p.transaction_manager.transaction_timeout_ms == 5000
    finally:
        p.close(0)


@pytest.mark.parametrize("conflict", [{"enable.idempotence": False}, {"acks": 1}])
def test_transactional_id_without_idempotence_is_a_configuration_error(conflict: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match=r"transactional\.id"):
        KafkaProducer({"bootstrap.servers": closed_port(), "transactional.id": "tid", **conflict})


def test_transactional_calls_on_a_non_transactional_producer_raise() -> None:
    p = KafkaProducer({"bootstrap.servers": closed_port(), "max.block.ms": 0})
    try:
        calls: list[Callable[[], object]] = [
            p.init_transactions, p.begin_transaction, p.commit_transaction, p.abort_transaction,
            lambda: p.send_offsets_to_transaction({TopicPartition("t", 0): 1}, Group()),
        ]
        for call in calls:
            with pytest.raises(IllegalStateError, match=r"setting the transactional\.id"):
                call()
    finally:
        p.close(0)


def test_send_and_commit_before_init_raise(txn_producer: KafkaProducer) -> None:
    with pytest.raises(IllegalStateError, match="before completing a call to init_transactions"):
        txn_producer.send("t", b"v")
    with pytest.raises(IllegalStateError, match="UNINITIALIZED to state COMMITTING_TRANSACTION"):
        txn_producer.commit_transaction()
    with pytest.raises(IllegalStateError, match="UNINITIALIZED to state IN_TRANSACTION"):
        txn_producer.begin_transaction()
    assert txn_producer.transaction_manager is not None
    assert txn_producer.transaction_manager.state is State.UNINITIALIZED


def test_init_transactions_that_times_out_is_resumed_by_calling_it_again(txn_producer: KafkaProducer) -> None:
    with pytest.raises(KafkaTimeoutError, match="call the same method again"):
        txn_producer.init_transactions(timeout=0.01)
    with pytest.raises(IllegalStateError, match="previous call to `init_transactions` timed out"):
        txn_producer.begin_transaction()
    with pytest.raises(KafkaTimeoutError):
        txn_producer.init_transactions(timeout=0.01)  # the same pending call, still waiting for a broker


def test_send_offsets_rejects_bad_group_metadata(txn_producer: KafkaProducer) -> None:
    with pytest.raises(IllegalArgumentError, match="could not be None"):
        txn_producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, None)  # type: ignore[arg-type]
    with pytest.raises(IllegalArgumentError, match="member_id is empty"):
        txn_producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, Group(generation_id=3, member_id=""))


def test_transactional_calls_after_close_raise(txn_producer: KafkaProducer) -> None:
    txn_producer.close(0)
    with pytest.raises(ProducerClosedError):
        txn_producer.begin_transaction()
