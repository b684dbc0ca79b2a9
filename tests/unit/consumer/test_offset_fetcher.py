from __future__ import annotations

import pytest

from pykafka_client.consumer.offset_fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, OffsetFetcher
from pykafka_client.consumer.subscription_state import OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import KafkaTimeoutError, TopicAuthorizationFailedError
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.protocol.messages.list_offsets_request import ListOffsetsRequest
from pykafka_client.protocol.messages.list_offsets_response import ListOffsetsResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient, Script, body_as
from tests.unit.consumer.helpers import ConsumerEnv, metadata_with

pytestmark = pytest.mark.timeout(60)

TP0 = TopicPartition("test", 0)
TP1 = TopicPartition("test", 1)


def make(
    reset: OffsetResetStrategy = OffsetResetStrategy.EARLIEST,
) -> tuple[OffsetFetcher, MockClient, ConsumerNetworkClient, SubscriptionState, MockTime]:
    time = MockTime()
    subs = SubscriptionState(reset)
    md = metadata_with({"test": 2}, {("test", 1): 1}, nodes=2)
    env = ConsumerEnv(time, md)
    client, cnc = env.client, env.cnc
    return OffsetFetcher(cnc, md, subs, time, retry_backoff_ms=100), client, cnc, subs, time


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


def start_reset(of: OffsetFetcher, cnc: ConsumerNetworkClient, subs: SubscriptionState) -> None:
    subs.assign_from_user([TP0])
    subs.reset_initializing_positions()
    of.reset_positions_if_needed()
    cnc.poll_no_wakeup()  # transmit


def test_reset_sends_list_offsets_and_sets_position() -> None:
    of, client, cnc, subs, _ = make()
    start_reset(of, cnc, subs)
    req = body_as(client.pending()[0], ListOffsetsRequest)
    assert req.topics[0].partitions[0].timestamp == EARLIEST_TIMESTAMP
    of.reset_positions_if_needed()
    cnc.poll_no_wakeup()
    assert len(client.sent) == 1  # no duplicate while in flight
    client.respond(lo_response({TP0: (0, 42)}))
    cnc.poll_no_wakeup()
    assert subs.is_offset_reset_needed(TP0)  # applied in the application thread, on the next call
    of.reset_positions_if_needed()
    pos = subs.position(TP0)
    assert pos is not None and (pos.offset, pos.offset_epoch) == (42, 3)


def test_latest_strategy_uses_latest_timestamp() -> None:
    of, client, cnc, subs, _ = make(OffsetResetStrategy.LATEST)
    start_reset(of, cnc, subs)
    assert body_as(client.pending()[0], ListOffsetsRequest).topics[0].partitions[0].timestamp == LATEST_TIMESTAMP


def test_reset_result_dropped_after_seek() -> None:
    of, client, cnc, subs, _ = make()
    start_reset(of, cnc, subs)
    subs.seek(TP0, 7)
    client.respond(lo_response({TP0: (0, 42)}))
    cnc.poll_no_wakeup()
    of.reset_positions_if_needed()
    pos = subs.position(TP0)
    assert pos is not None and pos.offset == 7


def test_reset_retries_after_backoff_on_error() -> None:
    of, client, cnc, subs, time = make()
    start_reset(of, cnc, subs)
    client.respond(lo_response({TP0: (6, -1)}))  # NOT_LEADER_OR_FOLLOWER
    cnc.poll_no_wakeup()
    of.reset_positions_if_needed()
    cnc.poll_no_wakeup()
    assert of.metadata.update_requested()
    assert len(client.sent) == 1
    time.sleep(100)
    of.reset_positions_if_needed()
    cnc.poll_no_wakeup()
    assert len(client.sent) == 2


def test_reset_disconnect_retries() -> None:
    of, client, cnc, subs, time = make()
    start_reset(of, cnc, subs)
    client.disconnect(client.pending()[0].destination)
    cnc.poll_no_wakeup()
    of.reset_positions_if_needed()
    time.sleep(100)
    of.reset_positions_if_needed()
    cnc.poll_no_wakeup()
    assert len(client.sent) == 2


def test_reset_fatal_error_raised_once() -> None:
    of, client, cnc, subs, _ = make()
    start_reset(of, cnc, subs)
    client.respond(lo_response({TP0: (29, -1)}))
    cnc.poll_no_wakeup()
    with pytest.raises(TopicAuthorizationFailedError):
        of.reset_positions_if_needed()
    of.reset_positions_if_needed()


def test_fetch_offsets_by_times_blocking_per_leader() -> None:
    of, client, _, _, time = make()

    def answer(body: ListOffsetsRequest) -> ListOffsetsResponse:
        return lo_response(
            {
                TopicPartition(t.name, p.partition_index): (0, 10 + p.partition_index)
                for t in body.topics
                for p in t.partitions
            }
        )

    Script(client).add(ListOffsetsRequest, answer, repeat=True)
    out = of.beginning_or_end_offsets([TP0, TP1], EARLIEST_TIMESTAMP, time.timer(1000))
    assert out == {TP0: 10, TP1: 11}
    assert sorted(int(r.destination) for r in client.sent) == [0, 1]


def test_fetch_offsets_by_times_retries_then_times_out() -> None:
    of, client, _, _, time = make()
    Script(client).add(ListOffsetsRequest, lo_response({TP0: (6, -1)}), repeat=True)
    with pytest.raises(KafkaTimeoutError, match="test-0"):
        of.fetch_offsets_by_times({TP0: 123}, time.timer(1000))
    assert len(client.sent) > 1


def test_offset_for_time_with_no_match_is_none() -> None:
    of, client, _, _, time = make()
    Script(client).add(ListOffsetsRequest, lo_response({TP0: (0, -1)}), repeat=True)
    out = of.fetch_offsets_by_times({TP0: 123}, time.timer(1000))
    assert out[TP0].offset is None
