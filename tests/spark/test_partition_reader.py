"""read_range (the executor side) against a MiniBroker, without a Spark session: whole batches decoded to
columns (kernel and Python reference), exact [from, until) ranges inside compressed batches, transactions
with aborts under read_committed, headers and timestamps."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer
from spark_connector.arrow_rows import arrow_schema
from spark_connector.options import parse_read_options
from spark_connector.partition_reader import read_range
from spark_connector.planner import OffsetRange
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.spark.read_helpers import create_topic, fresh_topic

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("record_impl")]


@pytest.fixture(scope="module")
def txn_topic(spark_broker: MiniBroker) -> Iterator[tuple[str, dict[int, tuple[bytes, bool]]]]:
    """A 1-partition topic of lz4 batches: plain records, a committed, an aborted and a committed transaction.
    Returns the topic and {offset: (value, aborted)} of every data record."""
    topic = fresh_topic("pr")
    create_topic(spark_broker, topic, 1)
    written: dict[int, tuple[bytes, bool]] = {}

    def send(producer: KafkaProducer, lo: int, hi: int, aborted: bool) -> None:
        futures = [(i, producer.send(topic, b"v%d" % i, key=b"k%d" % i, partition=0, timestamp=1_000 + i,
                                     headers=[("n", b"%d" % i)] if i % 2 else None)) for i in range(lo, hi)]
        producer.flush()
        for i, f in futures:
            written[f.result().offset] = (b"v%d" % i, aborted)

    servers = spark_broker.bootstrap_servers
    with KafkaProducer(bootstrap_servers=servers, compression_type="lz4", linger_ms=50) as plain:
        send(plain, 0, 20, False)
    with KafkaProducer(bootstrap_servers=servers, transactional_id=f"{topic}-txn", compression_type="lz4",
                       linger_ms=50) as producer:
        producer.init_transactions()
        for lo, hi, commit in ((20, 30, True), (30, 45, False), (45, 50, True)):
            producer.begin_transaction()
            send(producer, lo, hi, not commit)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    yield topic, written


def read(broker: MiniBroker, topic: str, lo: int, hi: int, **options: str) -> pa.Table:
    opts = parse_read_options({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
                               "includeHeaders": "true", **options}, streaming=False)
    batches = list(read_range(OffsetRange(topic, 0, lo, hi), opts))
    for b in batches:
        assert b.schema == arrow_schema(True)
    return pa.Table.from_batches(batches, schema=arrow_schema(True))


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_range_inside_compressed_transactional_batches(
    spark_broker: MiniBroker, txn_topic: tuple[str, dict[int, tuple[bytes, bool]]], isolation: str
) -> None:
    topic, written = txn_topic
    end = max(written) + 2  # the last commit marker
    for lo, hi in ((0, end), (3, 17), (17, 40), (25, end - 1)):
        got = read(spark_broker, topic, lo, hi, **{"kafka.isolation.level": isolation}).to_pylist()
        want = [o for o in sorted(written) if lo <= o < hi and (isolation == "read_uncommitted" or not written[o][1])]
        assert [r["offset"] for r in got] == want, (lo, hi)
        for r in got:
            i = int(r["value"][1:])
            assert (r["key"], r["value"], r["topic"], r["partition"]) == (b"k%d" % i, b"v%d" % i, topic, 0)
            assert (round(r["timestamp"].timestamp() * 1000), r["timestampType"]) == (1_000 + i, 0)
            assert r["headers"] == ([{"key": "n", "value": b"%d" % i}] if i % 2 else None)


def test_empty_after_skipping_only_aborted_records(
    spark_broker: MiniBroker, txn_topic: tuple[str, dict[int, tuple[bytes, bool]]]
) -> None:
    topic, written = txn_topic
    aborted = sorted(o for o, (_, a) in written.items() if a)
    table = read(spark_broker, topic, aborted[0], aborted[-1] + 1, **{"kafka.isolation.level": "read_committed"})
    assert table.num_rows == 0
