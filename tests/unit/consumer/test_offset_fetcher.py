from __future__ import annotations

import pytest

from pykafka_client.consumer.offset_fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, OffsetFetcher
from pykafka_client.consumer.subscription_state import OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import DisconnectError, KafkaTimeoutError, TopicAuthorizationFailedError
from pykafka_client.protocol.messages.list_offsets_request import ListOffsetsRequest
from pykafka_client.protocol.messages.list_offsets_response import ListOffsetsResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.consumer.helpers import FakeConsumerClient, metadata_with

pytestmark = pytest.mark.timeout(60)

TP0 = TopicPartition("test", 0)
TP1 = TopicPartition("test", 1)


def make(
    reset: OffsetResetStrategy = OffsetResetStrategy.EARLIEST,
) -> tuple[OffsetFetcher, FakeConsumerClient, SubscriptionState, MockTime]:
    time = MockTime()
    client = FakeConsumerClient(time)
    subs = SubscriptionState(reset)
    md = metadata_with({"test": 2}, {("test", 1): 1}, nodes=2)
    return OffsetFetcher(client, md, subs, time, retry_backoff_ms=100), client, subs, time


def lo_response(parts: dict[TopicPartition, tuple[int, int]]) -> ListOffsetsResponse:
    topics: dict[str, ListOffsetsResponse.ListOffsetsTopicResponse] = {}
    for tp, (err, offset) in parts.items():
        t = topics.setdefault(tp.topic, ListOffsetsResponse.ListOffsetsTopicResponse(name=tp.topic))
        t.partitions.append(
            ListOffsetsResponse.ListOffsetsPartitionResponse(
                partition_index=tp.partition, error_code=err, offset=offset, timestamp=-1, leader_epoch=3
            )
        )
    return ListOffsetsResponse(topics=list(topics.values()))


def test_reset_sends_list_offsets_and_sets_position() -> None:
    of, client, subs, _ = make()
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    req: ListOffsetsRequest = client.pending()[0].body
    assert req.topics[0].partitions[0].timestamp == EARLIEST_TIMESTAMP
    of.reset_positions_if_needed()
    assert len(client.sent) == 1  # no duplicate while in flight
    client.respond(lo_response({TP0: (0, 42)}))
    assert subs.is_offset_reset_needed(TP0)  # applied in the application thread, on the next call
    of.reset_positions_if_needed()
    pos = subs.position(TP0)
    assert pos is not None and (pos.offset, pos.offset_epoch) == (42, 3)


def test_latest_strategy_uses_latest_timestamp() -> None:
    of, client, subs, _ = make(OffsetResetStrategy.LATEST)
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    assert client.pending()[0].body.topics[0].partitions[0].timestamp == LATEST_TIMESTAMP


def test_reset_result_dropped_after_seek() -> None:
    of, client, subs, _ = make()
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    subs.seek(TP0, 7)
    client.respond(lo_response({TP0: (0, 42)}))
    of.reset_positions_if_needed()
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 7


def test_reset_retries_after_backoff_on_error() -> None:
    of, client, subs, time = make()
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    client.respond(lo_response({TP0: (6, -1)}))  # NOT_LEADER_OR_FOLLOWER
    of.reset_positions_if_needed()
    assert of.metadata.update_requested()
    assert len(client.sent) == 1
    time.sleep(100)
    of.reset_positions_if_needed()
    assert len(client.sent) == 2


def test_reset_disconnect_retries() -> None:
    of, client, subs, time = make()
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    client.fail(DisconnectError("x"))
    of.reset_positions_if_needed()
    time.sleep(100)
    of.reset_positions_if_needed()
    assert len(client.sent) == 2


def test_reset_fatal_error_raised_once() -> None:
    of, client, subs, _ = make()
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    client.respond(lo_response({TP0: (29, -1)}))
    with pytest.raises(TopicAuthorizationFailedError):
        of.reset_positions_if_needed()
    of.reset_positions_if_needed()


def test_fetch_offsets_by_times_blocking_per_leader() -> None:
    of, client, _, time = make()

    def responder(node: object, body: object) -> object:
        assert isinstance(body, ListOffsetsRequest)
        return lo_response(
            {
                TopicPartition(t.name, p.partition_index): (0, 10 + p.partition_index)
                for t in body.topics
                for p in t.partitions
            }
        )

    client.auto_responders.append(responder)
    out = of.beginning_or_end_offsets([TP0, TP1], EARLIEST_TIMESTAMP, time.timer(1000))
    assert out == {TP0: 10, TP1: 11}
    assert sorted(s.node.id for s in client.sent) == [0, 1]


def test_fetch_offsets_by_times_retries_then_times_out() -> None:
    of, client, _, time = make()
    client.auto_responders.append(lambda node, body: lo_response({TP0: (6, -1)}))
    with pytest.raises(KafkaTimeoutError, match="test-0"):
        of.fetch_offsets_by_times({TP0: 123}, time.timer(1000))
    assert len(client.sent) > 1


def test_offset_for_time_with_no_match_is_none() -> None:
    of, client, _, time = make()
    client.auto_responders.append(lambda node, body: lo_response({TP0: (0, -1)}))
    out = of.fetch_offsets_by_times({TP0: 123}, time.timer(1000))
    assert out[TP0].offset is None
