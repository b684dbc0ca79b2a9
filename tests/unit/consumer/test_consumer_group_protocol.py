"""``group.protocol=consumer`` (KIP-848) in the consumer: configuration rules (Java's ConsumerConfig), and the
ConsumerGroupCoordinator over the real ConsumerNetworkClient and the project's MockClient with MockTime:
reconciliation order of the rebalance listener, acknowledgement, fencing, leaving, commits with the epoch."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Collection
from typing import Any

import pytest

from pykafka_client import KafkaConsumer, TopicPartition
from pykafka_client.consumer.abstract_coordinator import GroupRebalanceConfig
from pykafka_client.consumer.assignors import get_assignor_instances
from pykafka_client.consumer.config import ConsumerConfig
from pykafka_client.consumer.consumer_group_coordinator import ConsumerGroupCoordinator
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.membership_manager import MemberState
from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.errors import (
    CommitFailedError,
    ConfigurationError,
    FencedMemberEpochError,
    StaleMemberEpochError,
    TopicAuthorizationFailedError,
)
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.protocol.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from pykafka_client.protocol.messages.consumer_group_heartbeat_response import ConsumerGroupHeartbeatResponse
from pykafka_client.protocol.messages.find_coordinator_response import FindCoordinatorResponse
from pykafka_client.protocol.messages.offset_commit_request import OffsetCommitRequest
from pykafka_client.protocol.messages.offset_commit_response import OffsetCommitResponse
from pykafka_client.protocol.messages.offset_fetch_request import OffsetFetchRequest
from pykafka_client.protocol.messages.offset_fetch_response import OffsetFetchResponse
from pykafka_client.structs import OffsetAndMetadata
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.responses import metadata_response, nodes

pytestmark = pytest.mark.timeout(60)

TID = uuid.UUID(int=7)


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize("key,value", [("partition.assignment.strategy", "range"), ("session.timeout.ms", 10000),
                                       ("heartbeat.interval.ms", 1000)])  # fmt: skip
def test_classic_only_configs_are_rejected_with_consumer_protocol(key: str, value: object) -> None:
    """Java ConsumerConfig: CLASSIC_PROTOCOL_ONLY_CONFIGS set with group.protocol=consumer fail with
    "<keys> cannot be set when group.protocol=CONSUMER"."""
    with pytest.raises(ConfigurationError, match=re.escape(f"{key} cannot be set when group.protocol=CONSUMER")):
        ConsumerConfig({"group.id": "g", "group.protocol": "consumer", key: value})


def test_all_offending_keys_are_named_together() -> None:
    with pytest.raises(ConfigurationError, match=re.escape("session.timeout.ms, heartbeat.interval.ms cannot be set")):
        ConsumerConfig({"group.id": "g", "group.protocol": "CONSUMER", "session.timeout.ms": 10000,
                        "heartbeat.interval.ms": 100})  # fmt: skip


def test_remote_assignor_is_rejected_with_classic_protocol() -> None:
    """Java ConsumerConfig: CONSUMER_PROTOCOL_ONLY_CONFIGS (group.remote.assignor) with group.protocol=classic."""
    with pytest.raises(ConfigurationError, match=re.escape("group.remote.assignor cannot be set when group.protocol=CLASSIC")):
        ConsumerConfig({"group.id": "g", "group.remote.assignor": "range"})
    cfg = ConsumerConfig({"group.id": "g", "group.protocol": "consumer", "group.remote.assignor": "range"})
    assert cfg["group.protocol"] == "consumer" and cfg["group.remote.assignor"] == "range"
    assert ConsumerConfig({"group.id": "g"})["group.protocol"] == "classic"  # the default stays classic


# -- the coordinator over MockClient -------------------------------------------------------------


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.calls.append(("revoked", list(revoked)))

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.calls.append(("assigned", list(assigned)))

    def on_partitions_lost(self, lost: Collection[TopicPartition]) -> None:
        self.calls.append(("lost", list(lost)))


class Env:
    def __init__(self, *, instance_id: str | None = None, auto_commit: bool = False) -> None:
        self.time = MockTime(auto_tick_ms=1)
        self.metadata = ConsumerMetadata(SubscriptionState(), 100, 100, 300_000)
        self.metadata.bootstrap([("localhost", 9092)])
        self.metadata.update(0, metadata_response(nodes(1), {"t": 4}, topic_ids={"t": TID}), False,
                             self.time.hi_res_clock_ms())  # fmt: skip
        self.client = MockClient(self.time, self.metadata)
        self.cnc = ConsumerNetworkClient(self.client, self.metadata, self.time, 100, 1000)
        self.subs = SubscriptionState()
        self.metadata.subscriptions = self.subs
        self.listener = Recorder()
        self.subs.subscribe(["t"], self.listener)
        self.coord = ConsumerGroupCoordinator(
            GroupRebalanceConfig("g", instance_id, rebalance_timeout_ms=10000, request_timeout_ms=1000),
            self.cnc, self.time, self.subs, self.metadata, get_assignor_instances(["range"]),
            auto_commit_enabled=auto_commit, server_assignor="uniform",
        )  # fmt: skip
        self.coord.start_heartbeat_thread_if_needed = lambda: None  # type: ignore[method-assign]
        self.client.prepare_response(FindCoordinatorResponse(node_id=0, host="localhost", port=9092))

    def heartbeats(self) -> list[ConsumerGroupHeartbeatRequest]:
        return [r.body for r in self.client.requests if isinstance(r.body, ConsumerGroupHeartbeatRequest)]

    def sent_heartbeats(self) -> list[ConsumerGroupHeartbeatRequest]:
        return [r.body for r in self.client.sent if isinstance(r.body, ConsumerGroupHeartbeatRequest)]

    def answer(self, epoch: int, parts: list[int] | None = None, error: int = 0) -> None:
        asg = None
        if parts is not None:
            asg = ConsumerGroupHeartbeatResponse.Assignment(
                topic_partitions=[ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=TID, partitions=parts)])
        self.client.respond(ConsumerGroupHeartbeatResponse(error_code=error, member_id="ignored-v1",
                                                           member_epoch=epoch, heartbeat_interval_ms=500,
                                                           assignment=asg))  # fmt: skip

    def poll(self) -> None:
        """One consumer loop turn: take responses in, then the coordinator's poll (reconcile, heartbeat)."""
        self.cnc.poll_no_wakeup()
        self.coord.poll(self.time.timer(100))
        self.cnc.poll_no_wakeup()


def tps(*parts: int) -> list[TopicPartition]:
    return [TopicPartition("t", p) for p in parts]


def test_reconciliation_revokes_then_assigns_and_acknowledges() -> None:
    """KIP-848 / Java ConsumerMembershipManager: on a new target the member first revokes (listener gets only
    the removed partitions), then assigns (only the added ones), then acknowledges with what it owns."""
    e = Env()
    e.poll()
    join = e.heartbeats()[-1]
    assert join.member_epoch == 0 and join.subscribed_topic_names == ["t"] and join.server_assignor == "uniform"
    assert join.member_id  # KIP-1082: the client names its member id
    e.answer(1, [0, 1, 2])
    e.poll()
    assert e.listener.calls == [("assigned", tps(0, 1, 2))]
    assert e.subs.assigned_partitions() == set(tps(0, 1, 2))
    ack = e.heartbeats()[-1]
    assert ack.member_epoch == 1 and [(tp.topic_id, tp.partitions) for tp in ack.topic_partitions or []] == [
        (TID, [0, 1, 2])]
    e.answer(2, [1, 2, 3])
    e.poll()
    assert e.listener.calls[1:] == [("revoked", tps(0)), ("assigned", tps(3))]
    ack2 = e.heartbeats()[-1]
    assert ack2.member_epoch == 2 and (ack2.topic_partitions or [])[0].partitions == [1, 2, 3]
    assert e.coord.membership.state is MemberState.STABLE


def test_fenced_member_calls_on_partitions_lost_and_rejoins_with_epoch_0() -> None:
    """KIP-848: FENCED_MEMBER_EPOCH -> the partitions are lost (not revoked, no commit), rejoin with epoch 0."""
    e = Env(auto_commit=True)
    e.poll()
    e.answer(1, [0, 1])
    e.poll()
    e.answer(1)
    e.poll()
    e.time.sleep(500)  # the heartbeat interval the response gave
    e.poll()
    e.answer(1, error=FencedMemberEpochError.code)
    e.poll()
    assert e.listener.calls[-1] == ("lost", tps(0, 1))
    assert e.subs.assigned_partitions() == set()
    rejoin = e.heartbeats()[-1]
    assert rejoin.member_epoch == 0 and rejoin.topic_partitions == [] and rejoin.subscribed_topic_names == ["t"]


def test_commit_carries_member_id_and_epoch() -> None:
    """KIP-848: OffsetCommit (v9+) names the member id and its current epoch."""
    e = Env()
    e.poll()
    e.answer(3, [0])
    e.poll()
    member_id = e.coord.membership.member_id
    seen: list[OffsetCommitRequest] = []

    def capture(body: Any) -> bool:
        if isinstance(body, OffsetCommitRequest):
            seen.append(body)
            return True
        return False

    e.client.prepare_response(OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(
        name="t", partitions=[OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=0)])]),
        matcher=capture)  # fmt: skip
    assert e.coord.commit_offsets_sync({TopicPartition("t", 0): OffsetAndMetadata(5)}, e.time.timer(1000))
    assert [(c.generation_id_or_member_epoch, c.member_id) for c in seen] == [(3, member_id)]
    assert e.coord.offset_commit_oldest_version() == 9


@pytest.mark.parametrize("instance_id,epoch", [(None, -1), ("static-1", -2)])
def test_leave_revokes_then_sends_leave_epoch(instance_id: str | None, epoch: int) -> None:
    """KIP-848: unsubscribe/close revoke the owned partitions, then leave with epoch -1 (-2 for a static
    member, which keeps its assignment for its next incarnation)."""
    e = Env(instance_id=instance_id)
    e.poll()
    e.answer(1, [0])
    e.poll()
    e.coord.on_leave_prepare()
    e.coord.maybe_leave_group("closing")
    assert e.listener.calls[-1] == ("revoked", tps(0))
    leave = e.heartbeats()[-1]
    assert leave.member_epoch == epoch and leave.instance_id == instance_id
    assert e.coord.membership.state is MemberState.UNSUBSCRIBED


def test_enforce_rebalance_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    """Java AsyncKafkaConsumer.enforceRebalance: not supported by the consumer protocol, logged."""
    e = Env()
    c: KafkaConsumer[Any, Any] = KafkaConsumer({"group.id": "g", "group.protocol": "consumer"}, time=e.time,
                                               client=e.cnc, metadata=e.metadata)  # fmt: skip
    with caplog.at_level(logging.WARNING):
        c.enforce_rebalance()
    assert "Operation not supported in new consumer group protocol" in caplog.text
    assert isinstance(c.coordinator, ConsumerGroupCoordinator)


def _commit_response(error: int = 0) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(
        name="t", partitions=[OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=0, error_code=error)])])


def test_stale_member_epoch_is_retried_with_the_new_epoch_else_the_commit_fails() -> None:
    """Java CommitRequestManager: STALE_MEMBER_EPOCH is retried when the member has a newer epoch than the one
    the commit was built with; with the same epoch the commit fails (CommitFailedError)."""
    e = Env()
    e.poll()
    e.answer(3, [0])
    e.poll()
    epochs: list[int] = []

    def stale_then_moved_on(body: Any) -> bool:
        if not isinstance(body, OffsetCommitRequest):
            return False
        epochs.append(body.generation_id_or_member_epoch)
        e.coord.membership.member_epoch = 4  # a heartbeat response moved the member on meanwhile
        return True

    def capture(body: Any) -> bool:
        if isinstance(body, OffsetCommitRequest):
            epochs.append(body.generation_id_or_member_epoch)
            return True
        return False

    e.client.prepare_response(_commit_response(StaleMemberEpochError.code), matcher=stale_then_moved_on)
    e.client.prepare_response(_commit_response(), matcher=capture)
    assert e.coord.commit_offsets_sync({TopicPartition("t", 0): OffsetAndMetadata(5)}, e.time.timer(5000))
    assert epochs == [3, 4]
    e.client.prepare_response(_commit_response(StaleMemberEpochError.code), matcher=capture)
    with pytest.raises(CommitFailedError, match="STALE_MEMBER_EPOCH"):
        e.coord.commit_offsets_sync({TopicPartition("t", 0): OffsetAndMetadata(6)}, e.time.timer(5000))


def test_topic_authorization_failed_is_raised_by_poll_and_the_member_keeps_heartbeating() -> None:
    """Java's heartbeat manager: TOPIC_AUTHORIZATION_FAILED in a ConsumerGroupHeartbeat response is reported to
    the application (its next poll raises TopicAuthorizationException, once) and the member stays in its state,
    heartbeating again after the backoff with every field, so that it recovers once the ACLs are added."""
    e = Env()
    e.poll()
    e.answer(3, [0])
    e.poll()
    assert e.coord.membership.state is MemberState.STABLE
    e.time.sleep(500)
    e.poll()  # the heartbeat on the interval
    sent = len(e.sent_heartbeats())
    e.client.respond(ConsumerGroupHeartbeatResponse(error_code=TopicAuthorizationFailedError.code,
                                                    error_message="Not authorized to describe topic t"))  # fmt: skip
    e.cnc.poll_no_wakeup()
    with pytest.raises(TopicAuthorizationFailedError, match="Not authorized"):
        e.coord.poll(e.time.timer(100))
    assert e.coord.membership.state is MemberState.STABLE and e.coord.membership.member_epoch == 3
    assert e.subs.assigned_partitions() == set(tps(0))
    e.time.sleep(200)  # the retry backoff
    e.poll()  # raised once: this poll goes on
    again = e.sent_heartbeats()[sent:]
    assert again and again[0].member_epoch == 3 and again[0].subscribed_topic_names == ["t"]
    e.answer(3)
    e.poll()
    assert e.coord.membership.state is MemberState.STABLE and e.listener.calls == [("assigned", tps(0))]


def _fetch_response(offset: int, error: int = 0) -> OffsetFetchResponse:
    """The v8+ (group) form of an OffsetFetch answer for t-0."""
    return OffsetFetchResponse(groups=[OffsetFetchResponse.OffsetFetchResponseGroup(
        group_id="g", error_code=error, topics=[] if error else [OffsetFetchResponse.OffsetFetchResponseTopics(
            name="t", partitions=[OffsetFetchResponse.OffsetFetchResponsePartitions(partition_index=0,
                                                                                    committed_offset=offset)])])])  # fmt: skip


def test_offset_fetch_names_the_member_id_and_epoch_in_v9() -> None:
    """KIP-848 / Java CommitRequestManager: a member with an epoch reads its committed offsets with OffsetFetch
    v9, naming its member id and epoch (the group form), so that the coordinator can fence a stale member;
    STALE_MEMBER_EPOCH is retried once the member has a newer epoch."""
    e = Env()
    e.poll()
    e.answer(3, [0])
    e.poll()
    member_id = e.coord.membership.member_id
    seen: list[tuple[str | None, int]] = []

    def capture(body: Any, then_epoch: int | None = None) -> bool:
        if not isinstance(body, OffsetFetchRequest) or not body.groups:
            return False
        seen.append((body.groups[0].member_id, body.groups[0].member_epoch))
        if then_epoch is not None:
            e.coord.membership.member_epoch = then_epoch  # a heartbeat moved the member on meanwhile
        return True

    e.client.prepare_response(_fetch_response(0, StaleMemberEpochError.code), matcher=lambda b: capture(b, 4))
    e.client.prepare_response(_fetch_response(42), matcher=capture)
    committed = e.coord.fetch_committed_offsets(tps(0), e.time.timer(5000))
    assert committed == {TopicPartition("t", 0): OffsetAndMetadata(42)}
    assert seen == [(member_id, 3), (member_id, 4)]
    fetches = [r for r in e.client.sent if isinstance(r.body, OffsetFetchRequest)]
    assert all(r.oldest_allowed_version == r.latest_allowed_version == 9 for r in fetches)


def test_offset_fetch_before_the_first_epoch_names_no_member() -> None:
    """Java: without a member epoch (not joined yet) the OffsetFetch carries no member id or epoch."""
    e = Env()
    plain: list[OffsetFetchRequest] = []

    def capture(body: Any) -> bool:
        if isinstance(body, OffsetFetchRequest):
            plain.append(body)
            return True
        return False

    e.client.prepare_response(OffsetFetchResponse(topics=[OffsetFetchResponse.OffsetFetchResponseTopic(
        name="t", partitions=[OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=0, committed_offset=-1)])]),
        matcher=capture)  # fmt: skip
    assert e.coord.fetch_committed_offsets(tps(0), e.time.timer(5000)) == {TopicPartition("t", 0): None}
    assert len(plain) == 1 and not plain[0].groups and plain[0].group_id == "g"


def test_poll_timeout_leaves_then_next_poll_loses_partitions_and_rejoins() -> None:
    """Java (consumer protocol): when max.poll.interval.ms expires the member leaves with epoch -1 from the
    background; the next poll() reports its partitions lost and rejoins with epoch 0."""
    e = Env()
    e.poll()
    e.answer(1, [0, 1])
    e.poll()
    e.answer(1)
    e.poll()
    e.time.sleep(10_001)  # the rebalance timeout (max.poll.interval.ms) of Env's config
    e.coord.heartbeat_step(e.time.hi_res_clock_ms())
    e.cnc.poll_no_wakeup()
    assert e.heartbeats()[-1].member_epoch == -1
    assert e.coord.membership.state is MemberState.UNSUBSCRIBED
    e.poll()
    assert e.listener.calls[-1] == ("lost", tps(0, 1))
    rejoin = e.heartbeats()[-1]
    assert rejoin.member_epoch == 0 and rejoin.subscribed_topic_names == ["t"]

