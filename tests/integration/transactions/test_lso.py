"""The last stable offset, seen by our read_committed consumer: an open transaction holds it (and the records
after it, even non-transactional ones) back, and end_offsets and lag are computed from it; a commit releases
the held records; an abort releases what followed and skips the transaction's own records.

The transaction is held open by our producer or by confluent-kafka's (so the broker side is checked with a
second client), against mini_broker and noida-db (interop: proves the test).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pykafka_client import KafkaConsumer, KafkaProducer, TopicPartition
from tests.integration.transactions.harness import TxnProducer, create_topic, read_partition_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "lso"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture(params=["ours", "confluent"])
def txn(request: pytest.FixtureRequest, txn_broker: str) -> Iterator[TxnProducer]:
    create_topic(txn_broker, TOPIC, 1)
    producer = TxnProducer(request.param, txn_broker, "lso-txn")
    producer.init()
    try:
        yield producer
    finally:
        producer.close()


def _consumer(bootstrap: str, isolation: str) -> KafkaConsumer[bytes, bytes]:
    c: KafkaConsumer[bytes, bytes] = KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                                                    "enable.auto.commit": False})
    c.assign([TP])
    c.seek_to_beginning([TP])
    return c


def _drain(c: KafkaConsumer[bytes, bytes], seconds: float) -> list[bytes]:
    """Poll for ``seconds`` (long enough for a fetch to return what is fetchable) and return the values."""
    out: list[bytes] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out += [r.value for r in c.poll(0.2)]
    return out


def _end(c: KafkaConsumer[bytes, bytes]) -> int:
    return c.end_offsets([TP], timeout=10)[TP]


def test_open_transaction_holds_back_read_committed_then_commit_releases(txn: TxnProducer, txn_broker: str) -> None:
    txn.begin()
    txn.send(TOPIC, b"c1")
    txn.commit()
    with _consumer(txn_broker, "read_committed") as rc, _consumer(txn_broker, "read_uncommitted") as ru, \
            KafkaProducer({"bootstrap.servers": txn_broker}) as plain:
        assert _drain(rc, 1.0) == [b"c1"]
        stable = rc.position(TP)  # after c1 and its commit marker
        assert _end(rc) == stable

        txn.begin()
        txn.send(TOPIC, b"open-1")
        txn.send(TOPIC, b"open-2")
        txn.flush()  # the open transaction's records are in the log
        plain.send(TOPIC, b"after-open", partition=0).result(10)  # a committed record behind the open txn

        assert _drain(ru, 1.0) == [b"c1", b"open-1", b"open-2", b"after-open"]
        assert _end(ru) == stable + 3  # the high watermark
        assert _end(rc) == stable, "read_committed end offset is not the LSO (the open transaction's first offset)"
        assert _drain(rc, 1.5) == [], "read_committed consumer read past an open transaction"
        assert rc.position(TP) == stable
        assert rc.current_lag(TP) in (0, None)  # lag is measured to the LSO, not the high watermark

        txn.commit()
        assert _drain(rc, 1.5) == [b"open-1", b"open-2", b"after-open"]
        end = _end(rc)
        assert end == _end(ru) == stable + 4  # + the commit marker
        assert rc.position(TP) == end
        assert rc.current_lag(TP) == 0


def test_abort_skips_the_transaction_and_releases_what_follows(
    txn: TxnProducer, txn_broker: str, request: pytest.FixtureRequest
) -> None:
    with _consumer(txn_broker, "read_committed") as rc, KafkaProducer({"bootstrap.servers": txn_broker}) as plain:
        txn.begin()
        txn.send(TOPIC, b"doomed-1")
        txn.send(TOPIC, b"doomed-2")
        txn.flush()
        plain.send(TOPIC, b"plain", partition=0).result(10)
        assert _end(rc) == 0
        assert _drain(rc, 1.0) == []
        txn.abort()
        assert _drain(rc, 1.5) == [b"plain"]
        assert rc.position(TP) == _end(rc) == 4  # 2 aborted records, the plain one, the abort marker
        # committed after the abort: the producer is usable again
        txn.begin()
        txn.send(TOPIC, b"kept")
        txn.commit()
        kept = _drain(rc, 1.5)
        if "noida" in request.node.callspec.id and kept == []:
            # Seen with confluent-kafka's consumer too: noida-db lists the aborted transaction (offsets 0-3) in
            # a fetch from offset 4, so both clients take the same producer's next transaction for aborted.
            pytest.xfail("noida-db returns aborted transactions that end before the fetch offset")
        assert kept == [b"kept"]
    assert read_partition_ours(txn_broker, TOPIC, 0, "read_uncommitted") == [b"doomed-1", b"doomed-2", b"plain", b"kept"]
    assert read_partition_ours(txn_broker, TOPIC, 0, "read_committed") == [b"plain", b"kept"]
