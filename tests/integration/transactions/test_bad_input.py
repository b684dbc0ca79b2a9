"""Transactional misuse, end to end against a broker: each raises a specific error, nothing is committed and
nothing is lost (the producer, or a new one, then commits normally and only that is visible)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pykafka_client import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from pykafka_client.consumer.structs import ConsumerGroupMetadata
from pykafka_client.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    IllegalStateError,
    InvalidTxnTimeoutError,
    KafkaError,
)
from tests.integration.transactions.conftest import NOIDA, start_txn_broker
from tests.integration.transactions.harness import create_topic, read_partition_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "bad-input"
TP = TopicPartition(TOPIC, 0)
GROUP = "bad-input-group"


@pytest.fixture(params=["mini_broker", NOIDA])
def txn_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Misuse is caught by the client or the coordinator: the broker count changes nothing, so the
    3-broker cluster of the other transaction tests is left out here."""
    with start_txn_broker(request.param, tmp_path) as bootstrap:
        yield bootstrap


@pytest.fixture
def bootstrap(txn_broker: str) -> str:
    create_topic(txn_broker, TOPIC, 1)
    return txn_broker


@pytest.fixture
def producer(bootstrap: str) -> Iterator[KafkaProducer]:
    p = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": "bad-input-txn", "linger.ms": 5})
    try:
        yield p
    finally:
        p.close(5)


def _commit_one(p: KafkaProducer, value: bytes) -> None:
    p.begin_transaction()
    p.send(TOPIC, value, partition=0)
    p.commit_transaction(20)


def _committed_values(bootstrap: str) -> list[bytes]:
    return read_partition_ours(bootstrap, TOPIC, 0, "read_committed")


@pytest.mark.parametrize("call", ["init", "begin", "commit", "abort", "send_offsets"])
def test_transactional_calls_on_a_non_transactional_producer(bootstrap: str, call: str) -> None:
    with KafkaProducer({"bootstrap.servers": bootstrap}) as p:
        calls: dict[str, Callable[[], object]] = {
            "init": lambda: p.init_transactions(5),
            "begin": p.begin_transaction,
            "commit": lambda: p.commit_transaction(5),
            "abort": lambda: p.abort_transaction(5),
            "send_offsets": lambda: p.send_offsets_to_transaction({TP: OffsetAndMetadata(0)},
                                                                  ConsumerGroupMetadata(GROUP), 5),
        }
        with pytest.raises(IllegalStateError, match="transactional"):
            calls[call]()
        p.send(TOPIC, b"plain", partition=0).result(10)  # still an ordinary, working producer
    assert _committed_values(bootstrap) == [b"plain"]


def test_begin_before_init_and_commit_or_abort_without_begin(bootstrap: str, producer: KafkaProducer) -> None:
    with pytest.raises(IllegalStateError):
        producer.begin_transaction()
    producer.init_transactions(20)
    with pytest.raises(IllegalStateError):
        producer.commit_transaction(5)
    with pytest.raises(IllegalStateError):
        producer.abort_transaction(5)
    with pytest.raises(IllegalStateError):
        producer.init_transactions(5)  # only once
    _commit_one(producer, b"after-misuse")  # the state was not changed by the refused calls
    assert _committed_values(bootstrap) == [b"after-misuse"]


def test_send_outside_a_transaction(bootstrap: str, producer: KafkaProducer) -> None:
    producer.init_transactions(20)
    with pytest.raises(IllegalStateError):
        # Java throws from send(); a future failed with the same error is accepted too
        producer.send(TOPIC, b"outside", partition=0).result(10)
    _commit_one(producer, b"inside")
    assert read_partition_ours(bootstrap, TOPIC, 0, "read_uncommitted") == [b"inside"]  # never written


def _group_member(bootstrap: str, instance_id: str | None = None) -> KafkaConsumer[bytes, bytes]:
    config: dict[str, object] = {"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                                 "auto.offset.reset": "earliest", "session.timeout.ms": 10000}
    if instance_id is not None:
        config["group.instance.id"] = instance_id
    c: KafkaConsumer[bytes, bytes] = KafkaConsumer(config)
    c.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while not c.assignment():
        assert time.monotonic() < deadline, "the consumer never joined the group"
        c.poll(0.2)
    return c


def _committed_offset(bootstrap: str) -> int | None:
    with KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False}) as c:
        om = c.committed([TP], timeout=10).get(TP)
        return None if om is None else om.offset


def _send_offsets_is_refused(producer: KafkaProducer, metadata: ConsumerGroupMetadata,
                             error: type[KafkaError], bootstrap: str) -> None:
    """Inside a transaction with one record, send_offsets with ``metadata`` raises ``error``; the transaction
    cannot commit but aborts, neither the record nor the offset become visible, and the producer then commits
    a new transaction normally."""
    producer.begin_transaction()
    producer.send(TOPIC, b"with-stale-offsets", partition=0)
    with pytest.raises(error):
        producer.send_offsets_to_transaction({TP: OffsetAndMetadata(1)}, metadata, 10)
    with pytest.raises(KafkaError):
        producer.commit_transaction(10)  # abortable: commit refuses
    producer.abort_transaction(10)
    _commit_one(producer, b"after-abort")
    assert _committed_values(bootstrap) == [b"after-abort"]
    assert _committed_offset(bootstrap) is None


def _noida_lacks(request: pytest.FixtureRequest, check: str) -> None:
    """Skip a check noida-db 0.2.3 was seen not to make (the test fails there for that reason alone)."""
    if "noida" in request.node.callspec.id:
        pytest.skip(f"noida-db does not check {check}")


def _group_checks_on_txn_offset_commit(request: pytest.FixtureRequest) -> None:
    # Seen: TxnOffsetCommit with a stale generation or a replaced member id succeeds on noida-db.
    _noida_lacks(request, "the member, generation or instance id of TxnOffsetCommit")


def test_send_offsets_with_a_stale_generation(
    bootstrap: str, producer: KafkaProducer, request: pytest.FixtureRequest
) -> None:
    _group_checks_on_txn_offset_commit(request)
    producer.init_transactions(20)
    with _group_member(bootstrap) as member:
        stale = member.group_metadata()
        assert stale.generation_id >= 1 and stale.member_id
        member.enforce_rebalance()  # a new generation: the metadata taken before is stale
        deadline = time.monotonic() + 30
        while member.group_metadata().generation_id == stale.generation_id:
            assert time.monotonic() < deadline, "the group never rebalanced"
            member.poll(0.2)
        _send_offsets_is_refused(producer, stale, CommitFailedError, bootstrap)


def test_send_offsets_with_a_fenced_group_instance_id(
    bootstrap: str, producer: KafkaProducer, request: pytest.FixtureRequest
) -> None:
    _group_checks_on_txn_offset_commit(request)
    producer.init_transactions(20)
    with _group_member(bootstrap, "static-1") as first:
        old = first.group_metadata()
        with _group_member(bootstrap, "static-1") as _replacement:  # same instance id: the first is fenced
            assert _replacement.group_metadata().member_id != old.member_id
            _send_offsets_is_refused(producer, old, FencedInstanceIdError, bootstrap)


def test_transaction_timeout_above_the_broker_maximum(bootstrap: str) -> None:
    # The broker's transaction.max.timeout.ms defaults to 900000 (15 min). Java reports INVALID_TRANSACTION_TIMEOUT
    # from InitProducerId as a fatal KafkaException naming the error; InvalidTxnTimeoutError itself is fine too.
    with KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": "too-long",
                        "transaction.timeout.ms": 900_001}) as p:
        with pytest.raises(KafkaError, match=r"InvalidTxnTimeout|transaction timeout") as raised:
            p.init_transactions(20)
        assert isinstance(raised.value, InvalidTxnTimeoutError) or "InvalidTxnTimeout" in str(raised.value)
        with pytest.raises(KafkaError):
            p.begin_transaction()  # not initialized: nothing can be produced transactionally
    assert read_partition_ours(bootstrap, TOPIC, 0, "read_uncommitted") == []


def test_end_txn_for_an_unknown_producer_id(bootstrap: str, request: pytest.FixtureRequest) -> None:
    """EndTxn naming a producer id the transactional id does not map to (or a transactional id the coordinator
    never saw) is INVALID_PRODUCER_ID_MAPPING, and the real producer's transaction is untouched by it."""
    _noida_lacks(request, "the producer id of EndTxn (seen: NONE for a mismatched one)")
    from types import SimpleNamespace

    from pykafka_client.errors import InvalidPidMappingError
    from pykafka_client.protocol.messages.end_txn_request import EndTxnRequest
    from pykafka_client.protocol.messages.init_producer_id_request import InitProducerIdRequest
    from tests.integration.wire import Conn

    with KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": "real-txn"}) as real:
        real.init_transactions(20)
        real.begin_transaction()
        real.send(TOPIC, b"real", partition=0)
        real.flush(20)
        with Conn(SimpleNamespace(port=int(bootstrap.rsplit(":", 1)[1]))) as conn:  # type: ignore[arg-type]
            other = conn.call(InitProducerIdRequest(transactional_id="other-txn", transaction_timeout_ms=60000), 3)
            assert other.error_code == 0
            for txn_id, pid in (("other-txn", other.producer_id + 1000), ("never-seen-txn", other.producer_id)):
                response = conn.call(EndTxnRequest(transactional_id=txn_id, producer_id=pid,
                                                   producer_epoch=other.producer_epoch, committed=True), 3)
                assert response.error_code == InvalidPidMappingError.code, (txn_id, response)
        assert read_partition_ours(bootstrap, TOPIC, 0, "read_committed", settle=False) == []  # still open
        real.commit_transaction(20)
    assert _committed_values(bootstrap) == [b"real"]
