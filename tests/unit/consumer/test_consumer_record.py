from __future__ import annotations

from pykafka_client.consumer.consumer_record import ConsumerRecord, ConsumerRecords, TimestampType
from pykafka_client.structs import OffsetAndMetadata, TopicPartition


def _rec(tp: TopicPartition, offset: int) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(tp.topic, tp.partition, offset, 1000 + offset, TimestampType.CREATE_TIME, b"k", b"v")


def test_records_grouped_by_partition_in_order() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("u", 1)
    recs = ConsumerRecords({a: [_rec(a, 0), _rec(a, 1)], b: [_rec(b, 5)], TopicPartition("t", 9): []})
    assert recs.count() == len(recs) == 3
    assert recs.partitions() == {a, b}
    assert [r.offset for r in recs.records(a)] == [0, 1]
    assert [r.offset for r in recs.records(topic="u")] == [5]
    assert [(r.topic, r.offset) for r in recs] == [("t", 0), ("t", 1), ("u", 5)]
    assert TopicPartition("t", 9) not in recs
    assert recs[b][0].topic_partition() == b


def test_empty_records_are_falsy() -> None:
    assert not ConsumerRecords.empty()
    assert ConsumerRecords.empty().is_empty()


def test_next_offsets_and_record_fields() -> None:
    tp = TopicPartition("t", 0)
    r = _rec(tp, 3)
    assert (r.timestamp, r.timestamp_type, r.key, r.value, r.headers, r.leader_epoch) == (
        1003,
        TimestampType.CREATE_TIME,
        b"k",
        b"v",
        (),
        None,
    )
    recs = ConsumerRecords({tp: [r]}, {tp: OffsetAndMetadata(4)})
    assert recs.next_offsets() == {tp: OffsetAndMetadata(4)}
    assert r == _rec(tp, 3) and r != _rec(tp, 4)


def test_topic_partition_equals_plain_tuple() -> None:
    assert TopicPartition("t", 1) == ("t", 1)
    assert hash(TopicPartition("t", 1)) == hash(("t", 1))
    assert str(TopicPartition("t", 1)) == "t-1"
