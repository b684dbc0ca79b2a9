"""``pykafka transactions abort`` (and ``AdminClient.abort_transaction`` under it) against one MiniBroker: a
transactional producer of ours leaves a transaction open on a partition, which holds the partition's last
stable offset back so a read_committed consumer cannot pass it; the abort, named by the transaction's start
offset, writes the ABORT marker, after which the last stable offset is the log end, read_committed reads none
of the transaction's records and read_uncommitted reads them all. The partition's leader fences a marker with
an older coordinator epoch (exit 1, naming the error), and a start offset no transaction starts at, a missing
partition and contradictory flags each fail with one line and their own exit code."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaConsumer, KafkaProducer
from pykafka_client.admin import AbortTransactionSpec, AdminClient, IsolationLevel, OffsetSpec
from pykafka_client.errors import TransactionCoordinatorFencedError
from pykafka_client.structs import TopicPartition
from tests.integration.cli.conftest import Run, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def topic(pykafka: Run) -> str:
    name = f"cli-abort-{uuid.uuid4().hex[:8]}"
    created = pykafka("topics", "create", name, "--partitions", "1")
    assert created.returncode == 0, created.stderr
    return name


@pytest.fixture
def admin(broker: MiniBroker) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as a:
        yield a


def _read_all(broker: MiniBroker, tp: TopicPartition, isolation: str, end: int) -> list[bytes]:
    consumer = KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "isolation.level": isolation,
                              "enable.auto.commit": False})
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        values: list[bytes] = []
        for _ in range(100):
            values.extend(r.value for r in consumer.poll(0.2) if r.value is not None)
            if consumer.position(tp) >= end:
                break
        assert consumer.position(tp) >= end
        return values
    finally:
        consumer.close()


def test_abort_by_start_offset_releases_the_last_stable_offset(
    broker: MiniBroker, pykafka: Run, topic: str, admin: AdminClient
) -> None:
    tp = TopicPartition(topic, 0)
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap_servers,
                              "transactional.id": f"cli-abort-{uuid.uuid4().hex[:8]}", "linger.ms": 0})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"open-%d" % i, partition=0).result(30)
        committed_end = admin.list_offsets({tp: OffsetSpec.latest()},
                                           isolation_level=IsolationLevel.READ_COMMITTED)[tp].offset
        assert committed_end == 0  # the open transaction holds the last stable offset at its start

        [state] = json.loads(pykafka("producers", "describe", "--topic", topic, "--output", "json").stdout)
        assert state["current_transaction_start_offset"] == 0

        result = pykafka("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
        assert result.returncode == 0, result.stderr
        assert f"aborted the transaction of producer {state['producer_id']}" in result.stdout.decode()

        log_end = admin.list_offsets({tp: OffsetSpec.latest()})[tp].offset
        assert log_end == 4  # three records and the ABORT marker
        assert admin.list_offsets({tp: OffsetSpec.latest()},
                                  isolation_level=IsolationLevel.READ_COMMITTED)[tp].offset == log_end
        [after] = admin.describe_producers([tp])[tp]
        assert after.current_transaction_start_offset is None and after.coordinator_epoch == 0
        assert _read_all(broker, tp, "read_committed", log_end) == []
        assert _read_all(broker, tp, "read_uncommitted", log_end) == [b"open-0", b"open-1", b"open-2"]

        # Markers carry the coordinator epoch; the leader fences one older than the last it took.
        newer = AbortTransactionSpec(tp, after.producer_id, after.producer_epoch, coordinator_epoch=7)
        admin.abort_transaction(newer)
        with pytest.raises(TransactionCoordinatorFencedError):
            admin.abort_transaction(AbortTransactionSpec(tp, after.producer_id, after.producer_epoch, 3))
        stale = pykafka("transactions", "abort", "--topic", topic, "--partition", "0",
                        "--producer-id", str(after.producer_id), "--producer-epoch", str(after.producer_epoch),
                        "--coordinator-epoch", "3")
        assert stale.returncode == 1
        assert "TRANSACTION_COORDINATOR_FENCED" in one_error_line(stale)  # the CLI names Kafka's error code
    finally:
        producer.close(0)


def test_abort_argument_errors(pykafka: Run, topic: str) -> None:
    missing = pykafka("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "99")
    assert missing.returncode == 4
    line = one_error_line(missing)
    assert "no open transaction starts at offset 99" in line and "pykafka producers describe" in line

    both = pykafka("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0",
                   "--producer-id", "1")
    assert both.returncode == 2 and "not both" in one_error_line(both)
    neither = pykafka("transactions", "abort", "--topic", topic, "--partition", "0", "--producer-id", "1")
    assert neither.returncode == 2 and "--coordinator-epoch" in one_error_line(neither)

    no_partition = pykafka("transactions", "abort", "--topic", topic, "--partition", "5", "--producer-id", "1",
                           "--producer-epoch", "0", "--coordinator-epoch", "0")
    assert no_partition.returncode == 4 and "unknown topic or partition" in one_error_line(no_partition)


def test_abort_transaction_refuses_a_wrong_argument(admin: AdminClient) -> None:
    with pytest.raises(TypeError, match="AbortTransactionSpec"):
        admin.abort_transaction(("t", 0, 1, 0, 0))  # type: ignore[arg-type]
