"""The consumer across a leader change (issue 16, item 5): positions are validated against the new
leader with OffsetsForLeaderEpoch (KIP-320) and log truncation is detected; fetch responses' KIP-951 hints
move the leader at once. SubscriptionState alone, then PositionValidator and Fetcher over the real
ConsumerNetworkClient on MockClient + MockTime."""

from __future__ import annotations

import pytest

from pykafka_client.consumer.fetcher import FetchConfig, Fetcher
from pykafka_client.consumer.position_validator import PositionValidator
from pykafka_client.consumer.subscription_state import FetchPosition, OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import LogTruncationError, TopicAuthorizationFailedError
from pykafka_client.network.cluster import LeaderAndEpoch
from pykafka_client.protocol.messages.fetch_request import FetchRequest
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.protocol.messages.offset_for_leader_epoch_request import OffsetForLeaderEpochRequest
from pykafka_client.protocol.messages.offset_for_leader_epoch_response import OffsetForLeaderEpochResponse
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.consumer.helpers import ConsumerEnv, metadata_with, update_metadata

pytestmark = pytest.mark.timeout(60)

TP0 = TopicPartition("test", 0)
TP1 = TopicPartition("test", 1)
NODE0 = Node(0, "localhost", 9092)
NODE1 = Node(1, "localhost", 9093)
NOT_LEADER = 6
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
TOPIC_AUTHORIZATION_FAILED = 29


def fetching_at(subs: SubscriptionState, tp: TopicPartition, offset: int, offset_epoch: int | None,
                leader: int = 0, leader_epoch: int = 1) -> None:
    if not subs.is_assigned(tp):
        subs.assign_from_user([*subs.assigned_partitions_list(), tp])
    subs.seek_position(tp, FetchPosition(offset, offset_epoch, leader, leader_epoch))


# -- SubscriptionState ------------------------------------------------------------------------------


def test_new_leader_epoch_puts_a_position_with_an_epoch_in_await_validation() -> None:
    subs = SubscriptionState()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    assert subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    assert subs.awaiting_validation(TP0)
    assert not subs.is_fetchable(TP0) and not subs.has_valid_position(TP0)
    assert not subs.has_all_fetch_positions()
    assert subs.position(TP0) == FetchPosition(10, 1, 1, 2)
    assert TP0 not in subs.all_consumed()  # nothing unvalidated is committed
    assert subs.partitions_needing_validation(0) == {TP0: FetchPosition(10, 1, 1, 2)}


def test_same_leader_and_epoch_needs_no_validation() -> None:
    subs = SubscriptionState()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    assert not subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE0, 1))
    assert subs.is_fetchable(TP0)


def test_position_without_an_epoch_takes_the_new_leader_without_validation() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([TP0])
    subs.seek(TP0, 10)  # a plain seek: no epoch to validate with
    assert not subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    assert subs.is_fetchable(TP0)
    assert subs.position(TP0) == FetchPosition(10, None, 1, 2)


def test_unknown_leader_or_pending_reset_starts_no_validation() -> None:
    subs = SubscriptionState()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    assert not subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(None, 2))
    assert subs.is_fetchable(TP0)
    subs.request_offset_reset(TP0)
    assert not subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    assert subs.is_offset_reset_needed(TP0)


def test_end_offset_at_or_above_the_position_validates_it() -> None:
    subs = SubscriptionState()
    fetching_at(subs, TP0, 10, offset_epoch=1, leader=1, leader_epoch=2)
    subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 3))
    requested = subs.position(TP0)
    assert requested is not None
    assert subs.maybe_complete_validation(TP0, requested, 1, 10) is None
    assert subs.is_fetchable(TP0) and subs.position(TP0) == requested


def test_truncation_with_a_reset_policy_moves_to_the_first_divergent_offset() -> None:
    subs = SubscriptionState(OffsetResetStrategy.EARLIEST)
    fetching_at(subs, TP0, 10, offset_epoch=1)
    subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    requested = subs.position(TP0)
    assert requested is not None
    assert subs.maybe_complete_validation(TP0, requested, 1, 7) is None
    assert subs.is_fetchable(TP0)
    assert subs.position(TP0) == FetchPosition(7, 1, 1, 2)


def test_truncation_without_a_reset_policy_is_reported_and_the_partition_waits_for_a_seek() -> None:
    subs = SubscriptionState(OffsetResetStrategy.NONE)
    fetching_at(subs, TP0, 10, offset_epoch=1)
    subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    requested = subs.position(TP0)
    assert requested is not None
    truncation = subs.maybe_complete_validation(TP0, requested, 1, 7)
    assert truncation is not None
    assert truncation.partition == TP0 and truncation.fetch_position == requested
    assert truncation.divergent_offset == OffsetAndMetadata(7, "", 1)
    assert subs.awaiting_validation(TP0) and not subs.is_fetchable(TP0)
    subs.seek(TP0, 7)
    assert subs.is_fetchable(TP0)


def test_undefined_end_offset_resets_per_policy() -> None:
    subs = SubscriptionState(OffsetResetStrategy.LATEST)
    fetching_at(subs, TP0, 10, offset_epoch=1)
    subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    requested = subs.position(TP0)
    assert requested is not None
    assert subs.maybe_complete_validation(TP0, requested, -1, -1) is None
    assert subs.is_offset_reset_needed(TP0) and subs.reset_strategy(TP0) is OffsetResetStrategy.LATEST


def test_answer_for_a_position_that_moved_is_dropped() -> None:
    subs = SubscriptionState(OffsetResetStrategy.NONE)
    fetching_at(subs, TP0, 10, offset_epoch=1)
    subs.maybe_validate_position_for_current_leader(TP0, LeaderAndEpoch(NODE1, 2))
    requested = subs.position(TP0)
    assert requested is not None
    subs.seek(TP0, 3)
    assert subs.maybe_complete_validation(TP0, requested, 1, 7) is None
    assert subs.position(TP0) == FetchPosition(3)


def test_committed_offset_with_an_epoch_is_validated_first() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([TP0])
    subs.seek_unvalidated(TP0, FetchPosition(10, 1, 0, 2))
    assert subs.awaiting_validation(TP0)
    subs.assign_from_user([TP0, TP1])
    subs.seek_unvalidated(TP1, FetchPosition(10, None, 0, 2))
    assert subs.is_fetchable(TP1)


# -- PositionValidator ------------------------------------------------------------------------------


def make(
    reset: OffsetResetStrategy = OffsetResetStrategy.EARLIEST,
) -> tuple[PositionValidator, ConsumerEnv, SubscriptionState, MockTime]:
    time = MockTime()
    subs = SubscriptionState(reset)
    env = ConsumerEnv(time, metadata_with({"test": 2}, nodes=2, epoch=1))
    return PositionValidator(env.cnc, env.metadata, subs, time, retry_backoff_ms=100), env, subs, time


def epoch_response(parts: dict[TopicPartition, tuple[int, int, int]]) -> OffsetForLeaderEpochResponse:
    """``parts``: tp -> (error, leader epoch, end offset)."""
    topics: dict[str, OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult] = {}
    for tp, (err, epoch, end) in parts.items():
        t = topics.setdefault(tp.topic, OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=tp.topic))
        t.partitions.append(
            OffsetForLeaderEpochResponse.EpochEndOffset(error_code=err, partition=tp.partition, leader_epoch=epoch,
                                                        end_offset=end)
        )
    return OffsetForLeaderEpochResponse(topics=list(topics.values()))


def leader_moves_to_node1(env: ConsumerEnv, epoch: int = 2) -> None:
    update_metadata(env.metadata, {"test": 2}, {("test", 0): 1, ("test", 1): 1}, nodes=2, epoch=epoch)


def test_validation_is_sent_to_the_new_leader_with_the_positions_epochs() -> None:
    v, env, subs, _ = make()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    v.validate_positions_if_needed()
    assert env.pending() == []  # the leader did not change
    leader_moves_to_node1(env)
    v.validate_positions_if_needed()
    (request,) = env.pending()
    assert request.destination == "1"
    body = request.body
    assert isinstance(body, OffsetForLeaderEpochRequest)
    assert body.replica_id == -1
    assert [(t.topic, p.partition, p.current_leader_epoch, p.leader_epoch) for t in body.topics for p in t.partitions] == [
        ("test", 0, 2, 1)
    ]
    assert request.oldest_allowed_version == 3
    v.validate_positions_if_needed()
    assert len(env.pending()) == 1  # no second request while one is in flight
    env.respond(epoch_response({TP0: (0, 1, 12)}))
    assert subs.awaiting_validation(TP0)  # answers are applied in the application thread ...
    v.validate_positions_if_needed()
    assert subs.is_fetchable(TP0) and subs.position(TP0) == FetchPosition(10, 1, 1, 2)  # ... by the next call


def test_truncation_without_reset_policy_raises_log_truncation_error_saying_what_to_do() -> None:
    v, env, subs, _ = make(OffsetResetStrategy.NONE)
    fetching_at(subs, TP0, 10, offset_epoch=1)
    fetching_at(subs, TP1, 4, offset_epoch=1)
    leader_moves_to_node1(env)
    v.validate_positions_if_needed()
    env.respond(epoch_response({TP0: (0, 1, 8), TP1: (0, 1, 4)}))
    with pytest.raises(LogTruncationError) as info:
        v.validate_positions_if_needed()
    err = info.value
    assert err.offsets == {TP0: 10}
    assert err.divergent_offsets == {TP0: OffsetAndMetadata(8, "", 1)}
    assert err.partitions == {TP0}
    assert "seek" in str(err) and "auto.offset.reset" in str(err)
    assert subs.is_fetchable(TP1)  # validated normally
    assert not subs.is_fetchable(TP0)
    subs.seek(TP0, 8)  # what the message says to do
    v.validate_positions_if_needed()
    assert subs.is_fetchable(TP0)


def test_truncation_with_reset_policy_resumes_at_the_divergent_offset() -> None:
    v, env, subs, _ = make(OffsetResetStrategy.EARLIEST)
    fetching_at(subs, TP0, 10, offset_epoch=1)
    leader_moves_to_node1(env)
    v.validate_positions_if_needed()
    env.respond(epoch_response({TP0: (0, 1, 8)}))
    v.validate_positions_if_needed()
    assert subs.is_fetchable(TP0) and subs.position(TP0) == FetchPosition(8, 1, 1, 2)


@pytest.mark.parametrize("code", [FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER])
def test_retriable_error_is_retried_after_the_backoff(code: int) -> None:
    v, env, subs, time = make()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    leader_moves_to_node1(env)
    v.validate_positions_if_needed()
    assert not env.metadata.update_requested()
    env.respond(epoch_response({TP0: (code, -1, -1)}))
    v.validate_positions_if_needed()
    assert subs.awaiting_validation(TP0)
    if code != UNKNOWN_LEADER_EPOCH:
        assert env.metadata.update_requested()
    sent = len(env.sent)
    v.validate_positions_if_needed()
    assert len(env.sent) == sent  # backing off
    time.sleep(100)
    v.validate_positions_if_needed()
    assert len(env.sent) == sent + 1
    env.respond(epoch_response({TP0: (0, 1, 10)}))
    v.validate_positions_if_needed()
    assert subs.is_fetchable(TP0)


def test_disconnect_is_retried_and_topic_authorization_failure_is_raised() -> None:
    v, env, subs, time = make()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    leader_moves_to_node1(env)
    v.validate_positions_if_needed()
    env.disconnect()
    v.validate_positions_if_needed()  # retriable: no error
    assert subs.awaiting_validation(TP0)
    time.sleep(100)
    env.client.backoff(NODE1, 0)
    v.validate_positions_if_needed()
    env.respond(epoch_response({TP0: (TOPIC_AUTHORIZATION_FAILED, -1, -1)}))
    with pytest.raises(TopicAuthorizationFailedError):
        v.validate_positions_if_needed()


def test_leader_without_offsets_for_leader_epoch_v3_uses_the_position_unvalidated() -> None:
    v, env, subs, _ = make()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    leader_moves_to_node1(env)
    env.client.prepare_unsupported_version_response(lambda body: isinstance(body, OffsetForLeaderEpochRequest))
    v.validate_positions_if_needed()
    env.pending()
    v.validate_positions_if_needed()
    assert subs.is_fetchable(TP0) and subs.position(TP0) == FetchPosition(10, 1, 1, 2)


# -- Fetcher ------------------------------------------------------------------------------------------


def make_fetcher() -> tuple[Fetcher, ConsumerEnv, SubscriptionState]:
    time = MockTime()
    env = ConsumerEnv(time, metadata_with({"test": 2}, nodes=2, epoch=1))
    subs = SubscriptionState()
    return Fetcher(env.cnc, env.metadata, subs, FetchConfig(), time), env, subs


def fetch_error(tp: TopicPartition, code: int, leader: tuple[int, int] | None, endpoints: list[Node]) -> FetchResponse:
    pd = FetchResponse.PartitionData(partition_index=tp.partition, error_code=code, high_watermark=-1)
    if leader is not None:
        pd.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])
    return FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic=tp.topic, partitions=[pd])],
        node_endpoints=[FetchResponse.NodeEndpoint(node_id=n.id, host=n.host, port=n.port) for n in endpoints],
    )


@pytest.mark.parametrize("code", [NOT_LEADER, FENCED_LEADER_EPOCH])
def test_fetch_leader_hint_moves_the_leader_and_the_position_is_validated_before_the_next_fetch(code: int) -> None:
    f, env, subs = make_fetcher()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    f.send_fetches()
    node3 = Node(3, "localhost", 9095)  # a broker the cached metadata does not know yet
    env.respond(fetch_error(TP0, code, (3, 5), [node3]))
    assert env.metadata.current_leader(TP0) == LeaderAndEpoch(node3, 5)
    assert f.collect_fetch() == {}
    assert env.metadata.update_requested()
    assert f.send_fetches() == 0  # TP0 must be validated against node 3 first
    assert subs.awaiting_validation(TP0) and subs.position(TP0) == FetchPosition(10, 1, 3, 5)


def test_fetch_leader_hint_with_an_old_epoch_is_ignored() -> None:
    f, env, subs = make_fetcher()
    fetching_at(subs, TP0, 10, offset_epoch=1)
    f.send_fetches()
    env.respond(fetch_error(TP0, NOT_LEADER, (1, 1), [NODE1]))  # epoch 1 = cached: a stale broker's view
    assert env.metadata.current_leader(TP0) == LeaderAndEpoch(NODE0, 1)
    f.collect_fetch()
    assert f.send_fetches() == 1
    (request,) = env.pending()
    assert request.destination == "0"


def test_position_without_epoch_follows_the_hinted_leader_at_once() -> None:
    f, env, subs = make_fetcher()
    subs.assign_from_user([TP0])
    subs.seek(TP0, 10)
    f.send_fetches()
    env.respond(fetch_error(TP0, NOT_LEADER, (1, 2), [NODE1]))
    f.collect_fetch()
    assert f.send_fetches() == 1
    (request,) = env.pending()
    assert request.destination == "1"
    body = request.body
    assert isinstance(body, FetchRequest)
    assert body.topics[0].partitions[0].current_leader_epoch == 2


# -- KafkaConsumer ------------------------------------------------------------------------------------


def test_consumer_poll_raises_log_truncation_after_a_leader_change_and_continues_after_a_seek() -> None:
    from typing import Any

    from pykafka_client import KafkaConsumer
    from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
    from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
    from tests.doubles.mock_client import MockClient
    from tests.doubles.responses import metadata_response
    from tests.unit.consumer.helpers import batch

    time = MockTime(auto_tick_ms=1)
    md = ConsumerMetadata(SubscriptionState(), 100, 100, 300_000)
    md.bootstrap([("localhost", 9092)])
    md.update(0, metadata_response([NODE0, NODE1], {"t": 1}, leaders={("t", 0): 0}, leader_epoch=0), False, 0)
    client = MockClient(time, md)
    cnc = ConsumerNetworkClient(client, md, time, 100, 1000)
    c: KafkaConsumer[Any, Any] = KafkaConsumer({"auto.offset.reset": "none"}, time=time, client=cnc, metadata=md)
    tp = TopicPartition("t", 0)
    tid = md.fetch().topic_id("t")
    assert tid is not None

    def fetch_response(base: int, values: list[bytes], epoch: int) -> FetchResponse:
        pd = FetchResponse.PartitionData(partition_index=0, high_watermark=base + len(values),
                                         records=batch(base, values, leader_epoch=epoch))
        return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", topic_id=tid, partitions=[pd])])

    def fetch_from(node: Node, offset: int) -> tuple[Any, ...]:
        def matches(body: Any) -> bool:
            return isinstance(body, FetchRequest) and body.topics[0].partitions[0].fetch_offset == offset
        return matches, node

    matcher, node = fetch_from(NODE0, 0)
    client.prepare_response(fetch_response(0, [b"a", b"b", b"c"], epoch=0), matcher=matcher, node=node)
    c.assign([tp])
    c.seek(tp, 0)
    got: list[Any] = []
    for _ in range(5):
        got.extend(c.poll(0.2))
        if got:
            break
    assert [r.offset for r in got] == [0, 1, 2]
    # Node 0 dies; node 1 is elected at epoch 1, but its log holds epoch 0 only up to offset 1 (offset 2
    # was never replicated: an unclean election).
    md.update(0, metadata_response([NODE0, NODE1], {"t": 1}, leaders={("t", 0): 1}, leader_epoch=1), False, 0)
    client.prepare_response(
        epoch_response({tp: (0, 0, 1)}),
        matcher=lambda body: isinstance(body, OffsetForLeaderEpochRequest)
        and body.topics[0].partitions[0].leader_epoch == 0 and body.topics[0].partitions[0].current_leader_epoch == 1,
        node=NODE1,
    )
    with pytest.raises(LogTruncationError) as info:
        for _ in range(10):
            assert not c.poll(0.2)
    assert info.value.divergent_offsets == {tp: OffsetAndMetadata(1, "", 0)}
    matcher, node = fetch_from(NODE1, 1)
    client.prepare_response(fetch_response(1, [b"B", b"C"], epoch=1), matcher=matcher, node=node)
    c.seek(tp, 1)
    got = []
    for _ in range(5):
        got.extend(c.poll(0.2))
        if got:
            break
    assert [(r.offset, r.value) for r in got] == [(1, b"B"), (2, b"C")]
    c.close(0)


def test_seek_to_an_offset_with_its_leader_epoch_validates_it_first() -> None:
    from typing import Any

    from pykafka_client import KafkaConsumer
    from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
    from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
    from tests.doubles.mock_client import MockClient
    from tests.doubles.responses import metadata_response

    time = MockTime(auto_tick_ms=1)
    md = ConsumerMetadata(SubscriptionState(), 100, 100, 300_000)
    md.update(0, metadata_response([NODE0], {"t": 1}, leader_epoch=3), False, 0)
    cnc = ConsumerNetworkClient(MockClient(time, md), md, time, 100, 1000)
    c: KafkaConsumer[Any, Any] = KafkaConsumer({}, time=time, client=cnc, metadata=md)
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, OffsetAndMetadata(5, "", 2))
    assert c.subscriptions.awaiting_validation(tp)
    assert c.subscriptions.position(tp) == FetchPosition(5, 2, 0, 3)
    c.seek(tp, OffsetAndMetadata(6))  # no epoch: used as it is
    assert c.subscriptions.is_fetchable(tp)
    c.close(0)


def test_records_from_a_newer_epoch_than_metadata_knows_mark_the_cached_leader_stale() -> None:
    from tests.unit.consumer.helpers import batch

    f, env, subs = make_fetcher()
    subs.assign_from_user([TP0])
    subs.seek(TP0, 0)
    f.send_fetches()
    pd = FetchResponse.PartitionData(partition_index=0, high_watermark=2, records=batch(0, [b"a", b"b"], leader_epoch=3))
    env.respond(FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="test", partitions=[pd])]))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 1]
    position = subs.position(TP0)
    assert position is not None and position.offset_epoch == 3
    assert env.metadata.last_seen_leader_epoch(TP0) == 3
    assert env.metadata.current_leader(TP0) == LeaderAndEpoch(None, 3)  # unknown until metadata catches up
    assert env.metadata.update_requested()
