"""``AsyncKafkaProducer.resume_transaction`` / ``producer_id_and_epoch`` (twins of the sync producer's): a second
async producer adopts the transaction a first one left open (flushed, not ended) by its producer id and epoch,
and commits or aborts it; only a fresh transactional producer may resume. Under asyncio and trio."""

from __future__ import annotations

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import TopicPartition
from pykafka_client.aio import AsyncKafkaProducer
from pykafka_client.errors import IllegalStateError
from tests.integration.aio.conftest import topic_name
from tests.integration.aio.test_transactions import read_committed

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


def _config(broker: MiniBroker, txn_id: str) -> dict[str, object]:
    return {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5}


async def _leave_open(broker: MiniBroker, topic: str, txn_id: str, values: list[bytes]) -> tuple[int, int]:
    """Send ``values`` in a transaction, flush, and close without ending it (as a Spark task does)."""
    producer = AsyncKafkaProducer(_config(broker, txn_id))
    assert producer.producer_id_and_epoch() == (-1, -1)
    await producer.init_transactions(20)
    await producer.begin_transaction()
    for v in values:
        await producer.send(topic, v, partition=0)
    await producer.flush(20)
    pid_epoch = producer.producer_id_and_epoch()
    await producer.close(0)  # forced: a graceful close would abort the open transaction
    return pid_epoch


@pytest.mark.parametrize("end", ["commit", "abort"])
async def test_a_resumed_transaction_is_committed_or_aborted(broker: MiniBroker, end: str) -> None:
    topic = topic_name(f"resume-{end}")
    txn_id = f"tx-{topic}"
    pid, epoch = await _leave_open(broker, topic, txn_id, [b"a", b"b"])
    assert pid >= 0 and epoch >= 0
    async with AsyncKafkaProducer(_config(broker, txn_id)) as producer:
        assert producer.producer_id_and_epoch() == (-1, -1)
        await producer.resume_transaction(pid, epoch)
        assert producer.producer_id_and_epoch() == (pid, epoch)
        if end == "commit":
            await producer.commit_transaction(20)
        else:
            await producer.abort_transaction(20)
    expected = [b"a", b"b"] if end == "commit" else []
    assert await read_committed(broker, TopicPartition(topic, 0), len(expected)) == expected


async def test_resume_needs_a_fresh_transactional_producer(broker: MiniBroker) -> None:
    async with AsyncKafkaProducer(_config(broker, f"tx-{topic_name('fresh')}")) as producer:
        await producer.init_transactions(20)
        with pytest.raises(IllegalStateError, match="fresh producer"):
            await producer.resume_transaction(1, 0)
    async with AsyncKafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as plain:
        with pytest.raises(IllegalStateError):
            await plain.resume_transaction(1, 0)
