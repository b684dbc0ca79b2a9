"""``KafkaProducer.resume_transaction``: a second producer instance adopts the open transaction another one
left flushed but not committed (by producer id and epoch, without InitProducerId) and commits or aborts it;
a transaction already committed commits again as a no-op; one fenced since (a new InitProducerId on the
same transactional.id aborted it) raises ProducerFencedError. The Spark exactly-once sink relies on these
four answers (tasks leave their transactions open, the driver completes them)."""

from __future__ import annotations

import pytest

from pykafka_client import KafkaProducer
from pykafka_client.errors import IllegalStateError, ProducerFencedError
from tests.integration.transactions.harness import create_topic, read_partition_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _producer(bootstrap: str, txn_id: str) -> KafkaProducer:
    return KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})


def _open_transaction(bootstrap: str, topic: str, txn_id: str, values: list[bytes]) -> tuple[int, int]:
    """Write ``values`` in a transaction, flush, and close without ending it (as a Spark task does)."""
    p = _producer(bootstrap, txn_id)
    p.init_transactions(20)
    p.begin_transaction()
    for v in values:
        p.send(topic, v, partition=0)
    p.flush(20)
    pid_epoch = p.producer_id_and_epoch()
    p.close(0)  # forced: a graceful close would abort the open transaction
    return pid_epoch


@pytest.mark.parametrize("end", ["commit", "abort"])
def test_resumed_transaction_is_committed_or_aborted(txn_broker: str, end: str) -> None:
    topic = f"resume-{end}"
    create_topic(txn_broker, topic, 1)
    pid, epoch = _open_transaction(txn_broker, topic, "resume-" + end, [b"a", b"b"])
    with _producer(txn_broker, "resume-" + end) as q:
        q.resume_transaction(pid, epoch)
        assert q.producer_id_and_epoch() == (pid, epoch)
        if end == "commit":
            q.commit_transaction(20)
        else:
            q.abort_transaction(20)
    expected = [b"a", b"b"] if end == "commit" else []
    assert read_partition_ours(txn_broker, topic, 0, "read_committed") == expected


def test_committing_twice_is_a_no_op_and_a_fenced_transaction_raises(txn_broker: str) -> None:
    topic = "resume-twice"
    create_topic(txn_broker, topic, 1)
    pid, epoch = _open_transaction(txn_broker, topic, "resume-twice", [b"x"])
    for _ in range(2):  # a driver that crashed after the first commit commits again on recovery
        with _producer(txn_broker, "resume-twice") as q:
            q.resume_transaction(pid, epoch)
            q.commit_transaction(20)
    assert read_partition_ours(txn_broker, topic, 0, "read_committed") == [b"x"]

    pid, epoch = _open_transaction(txn_broker, topic, "resume-twice", [b"zombie"])
    fencer = _producer(txn_broker, "resume-twice")
    fencer.init_transactions(20)  # a retried task: bumps the epoch and aborts the open transaction
    fencer.close(5)
    with _producer(txn_broker, "resume-twice") as q:
        q.resume_transaction(pid, epoch)
        with pytest.raises(ProducerFencedError):
            q.commit_transaction(20)
    assert read_partition_ours(txn_broker, topic, 0, "read_committed") == [b"x"]


def test_resume_needs_a_fresh_transactional_producer(txn_broker: str) -> None:
    with _producer(txn_broker, "resume-fresh") as q:
        q.init_transactions(20)
        with pytest.raises(IllegalStateError, match="fresh producer"):
            q.resume_transaction(1, 0)
    with KafkaProducer({"bootstrap.servers": txn_broker}) as plain, pytest.raises(IllegalStateError):
        plain.resume_transaction(1, 0)
