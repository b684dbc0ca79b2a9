from __future__ import annotations

from typing import Any

import pytest

from pykafka_client.consumer.fetcher import READ_COMMITTED, FetchConfig, Fetcher
from pykafka_client.consumer.subscription_state import OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import (
    CorruptRecordError,
    OffsetOutOfRangeClientError,
    RecordDeserializationError,
    RecordTooLargeError,
    TopicAuthorizationFailedError,
)
from pykafka_client.protocol.messages.fetch_request import FetchRequest
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import body_as
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.unit.consumer.helpers import ConsumerEnv, batch, control_batch, metadata_with, update_metadata

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("record_impl")]

TP0 = TopicPartition("test", 0)
TP1 = TopicPartition("test", 1)


def make(
    partitions: int = 2,
    leaders: dict[tuple[str, int], int] | None = None,
    reset: OffsetResetStrategy = OffsetResetStrategy.EARLIEST,
    fetch_version: int = 12,
    **cfg: Any,
) -> tuple[Fetcher, ConsumerEnv, SubscriptionState]:
    time = MockTime()
    env = ConsumerEnv(time, metadata_with({"test": partitions}, leaders, nodes=2), fetch_version=fetch_version)
    subs = SubscriptionState(reset)
    return Fetcher(env.cnc, env.metadata, subs, FetchConfig(**cfg), time), env, subs


def response(parts: dict[TopicPartition, tuple[int, bytes | None]], **extra: Any) -> FetchResponse:
    by_topic: dict[str, list[FetchResponse.PartitionData]] = {}
    for tp, (err, records) in parts.items():
        pd = FetchResponse.PartitionData(
            partition_index=tp.partition, error_code=err, high_watermark=100, last_stable_offset=100, records=records
        )
        for k, v in extra.items():
            setattr(pd, k, v)
        by_topic.setdefault(tp.topic, []).append(pd)
    return FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic=t, partitions=ps) for t, ps in by_topic.items()]
    )


def assign(subs: SubscriptionState, *tps: TopicPartition, offset: int = 0) -> None:
    subs.assign_from_user(list(tps))
    for tp in tps:
        subs.seek(tp, offset)


def test_fetch_request_per_leader_with_limits() -> None:
    f, env, subs = make(leaders={("test", 1): 1}, max_wait_ms=77, min_bytes=3, max_bytes=999, fetch_size=55)
    assign(subs, TP0, TP1, offset=5)
    assert f.send_fetches() == 2
    by_node = {int(r.destination): body_as(r, FetchRequest) for r in env.pending()}
    req0 = by_node[0]
    assert (req0.max_wait_ms, req0.min_bytes, req0.max_bytes, req0.isolation_level) == (77, 3, 999, 0)
    assert [
        (t.topic, p.partition, p.fetch_offset, p.partition_max_bytes) for t in req0.topics for p in t.partitions
    ] == [("test", 0, 5, 55)]
    assert by_node[1].topics[0].partitions[0].partition == 1
    # one fetch in flight per node: nothing more to send
    assert f.send_fetches() == 0


def test_fetch_normal_and_position_advances() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c"]))}))
    recs = f.collect_fetch()
    assert [(r.offset, r.value, r.key) for r in recs[TP0]] == [(0, b"a", b"k0"), (1, b"b", b"k1"), (2, b"c", b"k2")]
    r = recs[TP0][0]
    assert (r.topic, r.partition, r.timestamp, r.headers, r.leader_epoch) == ("test", 0, 1000, (("h", b"1"),), 0)
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 3
    assert subs.partition_lag(TP0, False) == 97
    # next fetch goes out from the new position
    f.send_fetches()
    assert body_as(env.pending()[0], FetchRequest).topics[0].partitions[0].fetch_offset == 3


def test_max_poll_records_buffers_the_rest() -> None:
    f, env, subs = make(max_poll_records=2)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c"]))}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 1]
    assert f.send_fetches() == 0  # data still buffered for the partition: no new fetch
    assert [r.offset for r in f.collect_fetch()[TP0]] == [2]
    assert f.collect_fetch() == {}


def test_taking_the_last_records_frees_the_partition_for_the_pipelined_fetch() -> None:
    f, env, subs = make(max_poll_records=3)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b"]) + batch(2, [b"c"]) + control_batch(3, 1, True))}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 1, 2]
    # max.poll.records ended exactly at the end of the data: nothing buffered, the next fetch goes out now
    # (KafkaConsumer.poll sends it before handing the records over), from past the trailing marker
    assert f.send_fetches() == 1
    assert body_as(env.pending()[-1], FetchRequest).topics[0].partitions[0].fetch_offset == 4


def test_records_before_position_in_batch_are_skipped() -> None:
    f, env, subs = make()
    assign(subs, TP0, offset=2)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c", b"d"], compression=3))}))  # lz4
    assert [r.offset for r in f.collect_fetch()[TP0]] == [2, 3]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression(codec: int) -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"x" * 100] * 5, compression=codec))}))
    assert [r.value for r in f.collect_fetch()[TP0]] == [b"x" * 100] * 5


def test_stale_response_after_seek_is_dropped() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    subs.seek(TP0, 10)
    env.respond(response({TP0: (0, batch(0, [b"a"]))}))
    assert f.collect_fetch() == {}
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 10


def test_paused_partition_returns_nothing_and_is_not_fetched() -> None:
    f, env, subs = make()
    assign(subs, TP0, TP1)
    subs.pause(TP1)
    f.send_fetches()
    assert [p.partition for t in body_as(env.pending()[0], FetchRequest).topics for p in t.partitions] == [0]
    env.respond(response({TP0: (0, batch(0, [b"a"]))}))
    subs.pause(TP0)
    assert f.collect_fetch() == {}
    assert not f.has_available_fetches()  # paused data does not stop poll() from blocking
    assert f.send_fetches() == 0  # TP0 is paused (its data kept), TP1 is paused
    subs.resume(TP0)
    assert f.has_available_fetches()
    assert [r.value for r in f.collect_fetch()[TP0]] == [b"a"]  # kept while paused, no refetch


def test_unassigned_partition_data_dropped() -> None:
    f, env, subs = make()
    assign(subs, TP0, TP1)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a"])), TP1: (0, batch(0, [b"b"]))}))
    subs.assign_from_user([TP1])
    f.clear_buffered_data_for_unassigned_partitions()
    out = f.collect_fetch()
    assert list(out) == [TP1]


def test_corrupt_batch_raises_with_partition_and_offset_and_is_not_skipped() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    good = batch(0, [b"a", b"b"])
    bad = bytearray(batch(2, [b"c"]))
    bad[-1] ^= 0xFF  # flip a payload byte: CRC mismatch
    f.send_fetches()
    env.respond(response({TP0: (0, good + bytes(bad) + batch(3, [b"d"]))}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 1]
    for _ in range(2):  # raised again and again; offset 3 is never returned
        with pytest.raises(CorruptRecordError) as ei:
            f.collect_fetch()
        assert "test-0" in str(ei.value) and "offset 2" in str(ei.value)
        assert ei.value.offset == 2  # type: ignore[attr-defined]
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 2
    # the application can skip it explicitly
    subs.seek(TP0, 3)
    assert f.collect_fetch() == {}


def test_crc_not_checked_when_disabled() -> None:
    f, env, subs = make(check_crcs=False)
    assign(subs, TP0)
    b = bytearray(batch(0, [b"abc"]))
    b[20] ^= 0x01  # corrupt the stored CRC only
    f.send_fetches()
    env.respond(response({TP0: (0, bytes(b))}))
    assert [r.value for r in f.collect_fetch()[TP0]] == [b"abc"]


def test_garbage_records_raise_corrupt() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 20)}))
    with pytest.raises(CorruptRecordError, match="test-0"):
        f.collect_fetch()


def test_deserializer_error_names_partition_and_offset() -> None:
    def bad(topic: str, data: bytes | None, headers: Any) -> Any:
        if data == b"boom":
            raise ValueError("nope")
        return data

    f, env, subs = make(value_deserializer=bad)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"ok", b"boom", b"after"]))}))
    assert [r.value for r in f.collect_fetch()[TP0]] == [b"ok"]
    with pytest.raises(RecordDeserializationError) as ei:
        f.collect_fetch()
    assert (ei.value.partition, ei.value.offset) == (TP0, 1)
    subs.seek(TP0, 2)
    f.send_fetches()


def test_offset_out_of_range_resets_with_policy() -> None:
    f, env, subs = make(reset=OffsetResetStrategy.LATEST)
    assign(subs, TP0, offset=50)
    f.send_fetches()
    env.respond(response({TP0: (1, None)}))
    assert f.collect_fetch() == {}
    assert subs.is_offset_reset_needed(TP0)
    assert subs.reset_strategy(TP0) is OffsetResetStrategy.LATEST


def test_offset_out_of_range_without_policy_raises() -> None:
    f, env, subs = make(reset=OffsetResetStrategy.NONE)
    assign(subs, TP0, offset=50)
    f.send_fetches()
    env.respond(response({TP0: (1, None)}))
    with pytest.raises(OffsetOutOfRangeClientError) as ei:
        f.collect_fetch()
    assert ei.value.offsets == {TP0: 50}
    assert f.collect_fetch() == {}  # raised once; the empty completed fetch is gone


def test_offset_out_of_range_for_stale_position_ignored() -> None:
    f, env, subs = make(reset=OffsetResetStrategy.NONE)
    assign(subs, TP0, offset=50)
    f.send_fetches()
    subs.seek(TP0, 3)
    env.respond(response({TP0: (1, None)}))
    assert f.collect_fetch() == {}


@pytest.mark.parametrize("err", [6, 9, 3, 74, 56])
def test_leader_errors_request_metadata_update(err: int) -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (err, None)}))
    assert not f.metadata.update_requested()
    assert f.collect_fetch() == {}
    assert f.metadata.update_requested()


def test_leader_change_moves_fetch_to_new_leader() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (6, None)}))
    f.collect_fetch()
    update_metadata(f.metadata, {"test": 2}, {("test", 0): 1}, nodes=2, epoch=1)
    f.send_fetches()
    s = env.pending()[0]
    assert int(s.destination) == 1
    assert body_as(s, FetchRequest).topics[0].partitions[0].current_leader_epoch == 1


def test_topic_authorization_failed_raises() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (29, None)}))
    with pytest.raises(TopicAuthorizationFailedError):
        f.collect_fetch()


def test_disconnect_frees_node_for_next_fetch() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    assert f.send_fetches() == 0
    env.disconnect()
    assert f.send_fetches() == 1


def test_unknown_leader_requests_update_and_skips() -> None:
    f, _env, subs = make()
    subs.assign_from_user([TopicPartition("other", 0)])
    subs.seek(TopicPartition("other", 0), 0)
    assert f.send_fetches() == 0
    assert f.metadata.update_requested()


def test_partial_batch_only_raises_record_too_large() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"x" * 200])[:100])}))
    with pytest.raises(RecordTooLargeError):
        f.collect_fetch()


def test_read_committed_skips_aborted_and_control() -> None:
    f, env, subs = make(isolation_level=READ_COMMITTED)
    assign(subs, TP0)
    data = (
        batch(0, [b"c1", b"c2"], producer_id=1, transactional=True)
        + control_batch(2, 1, commit=True)
        + batch(3, [b"a1", b"a2"], producer_id=2, transactional=True)
        + control_batch(5, 2, commit=False)
        + batch(6, [b"plain"])
    )
    f.send_fetches()
    aborted = [FetchResponse.AbortedTransaction(producer_id=2, first_offset=3)]
    env.respond(response({TP0: (0, data)}, aborted_transactions=aborted))
    assert [(r.offset, r.value) for r in f.collect_fetch()[TP0]] == [(0, b"c1"), (1, b"c2"), (6, b"plain")]
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 7


def test_read_uncommitted_returns_aborted_but_not_control() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    data = batch(0, [b"a1"], producer_id=2, transactional=True) + control_batch(1, 2, commit=False) + batch(2, [b"x"])
    f.send_fetches()
    aborted = [FetchResponse.AbortedTransaction(producer_id=2, first_offset=0)]
    env.respond(response({TP0: (0, data)}, aborted_transactions=aborted))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 2]


def test_control_batch_at_end_advances_position() -> None:
    f, env, subs = make(isolation_level=READ_COMMITTED)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"v"], producer_id=1, transactional=True) + control_batch(1, 1, True))}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0]
    f.collect_fetch()
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 2


def test_topic_ids_used_from_v13() -> None:
    f, env, subs = make(fetch_version=13)
    assign(subs, TP0)
    f.send_fetches()
    req = body_as(env.pending()[0], FetchRequest)
    tid = req.topics[0].topic_id
    resp = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic_id=tid,
                partitions=[FetchResponse.PartitionData(partition_index=0, high_watermark=1, records=batch(0, [b"z"]))],
            )
        ]
    )
    env.respond(resp)
    assert [r.value for r in f.collect_fetch()[TP0]] == [b"z"]


def test_overlapping_batches_never_return_an_offset_twice() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c"]) + batch(1, [b"x", b"y", b"z"]))}))
    assert [(r.offset, r.value) for r in f.collect_fetch()[TP0]] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"z")]


@pytest.mark.parametrize("deserialize", [False, True])
def test_offsets_not_increasing_inside_a_batch_are_skipped(monkeypatch: pytest.MonkeyPatch, deserialize: bool) -> None:
    """On the Python path (the kernel's decode_consumer_records is checked against it in test_records_native)."""
    from pykafka_client.consumer.completed_fetch import CompletedFetch
    from pykafka_client.protocol.records import _native
    from pykafka_client.protocol.records.record import Record
    from pykafka_client.protocol.records.record_batch import TimestampType

    def decoded(self: CompletedFetch, b: Any) -> list[Record]:
        return [Record(o, 1000, TimestampType.CREATE_TIME, None, b"v%d" % o, []) for o in (0, 2, 1, 3, 3, 5)]

    monkeypatch.setattr(CompletedFetch, "_decode", decoded)
    monkeypatch.setattr(_native, "kernel", None)
    upper = (lambda topic, data, headers: data.upper()) if deserialize else None
    f, env, subs = make(max_poll_records=3, value_deserializer=upper)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"-"] * 6))}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 2, 3]
    assert [(r.offset, r.value) for r in f.collect_fetch()[TP0]] == [(5, b"V5" if deserialize else b"v5")]
