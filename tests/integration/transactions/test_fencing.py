"""Fencing: two of our producers with one transactional.id. When the second one initializes, the first,
still inside a transaction whose records are already in the log, gets ProducerFencedError on its next
transactional call and on every call after it, and nothing of its open transaction is ever visible to a
read_committed consumer (the coordinator aborted it), while the new producer's transactions are."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pykafka_client import KafkaProducer, OffsetAndMetadata, TopicPartition
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.errors import ProducerFencedError
from tests.integration.transactions.harness import create_topic, read_partition_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "fenced"

NEXT_CALLS: dict[str, Callable[[KafkaProducer], object]] = {
    "commit": lambda p: p.commit_transaction(10),
    "abort": lambda p: p.abort_transaction(10),
    "send_offsets": lambda p: p.send_offsets_to_transaction(
        {TopicPartition(TOPIC, 0): OffsetAndMetadata(1)}, ConsumerGroupMetadata("fenced-group"), 10),
}


def _producer(bootstrap: str) -> KafkaProducer:
    return KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": "one-id", "linger.ms": 5})


@pytest.mark.parametrize("next_call", sorted(NEXT_CALLS))
def test_older_producer_is_fenced_and_its_open_transaction_never_visible(txn_broker: str, next_call: str) -> None:
    create_topic(txn_broker, TOPIC, 1)
    old = _producer(txn_broker)
    new = _producer(txn_broker)
    try:
        old.init_transactions(20)
        old.begin_transaction()
        futures = [old.send(TOPIC, b"zombie-%d" % i, partition=0) for i in range(3)]
        old.flush(20)
        assert [f.result(1).offset for f in futures] == [0, 1, 2]  # in the log, uncommitted

        new.init_transactions(20)  # bumps the epoch and aborts the old producer's open transaction

        with pytest.raises(ProducerFencedError):
            NEXT_CALLS[next_call](old)
        # fatal: every later transactional call raises it too
        with pytest.raises(ProducerFencedError):
            old.begin_transaction()
        with pytest.raises(ProducerFencedError):
            old.commit_transaction(5)

        new.begin_transaction()
        new.send(TOPIC, b"live", partition=0)
        new.commit_transaction(20)
    finally:
        old.close(5)
        new.close(5)

    assert read_partition_ours(txn_broker, TOPIC, 0, "read_committed") == [b"live"]
    uncommitted = read_partition_ours(txn_broker, TOPIC, 0, "read_uncommitted")
    assert uncommitted[:3] == [b"zombie-0", b"zombie-1", b"zombie-2"] and uncommitted[-1] == b"live"
