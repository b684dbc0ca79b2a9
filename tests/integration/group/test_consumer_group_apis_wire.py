"""The KIP-848 consumer group APIs of a real MiniBroker over raw frames: ConsumerGroupHeartbeat v0/v1 (join,
fencing, leave, session expiry), ConsumerGroupDescribe, OffsetCommit v9 / OffsetFetch v9 member-epoch checks,
and how the classic APIs see a consumer group (ListGroups types, DescribeGroups, JoinGroup, DeleteGroups)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client.consumer.assignors.abstract_assignor import Assignment, Subscription
from pykafka_client.consumer.consumer_protocol import (
    deserialize_assignment,
    serialize_assignment,
    serialize_subscription,
)
from pykafka_client.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from pykafka_client.structs import TopicPartition
from tests.integration.wire import Conn
from tests.unit.broker.group.harness import subscription

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE = 0
INCONSISTENT_GROUP_PROTOCOL = 23
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
UNSUPPORTED_VERSION = 35
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
GROUP_AUTHORIZATION_FAILED = 30
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
FENCED_MEMBER_EPOCH = 110
STALE_MEMBER_EPOCH = 113
TOPIC = "cg-wire"
SESSION_MS = 1500
HEARTBEAT_MS = 200


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker(num_network_threads=1, num_io_threads=2, group_initial_rebalance_delay_ms=0,
                    group_consumer_session_timeout_ms=SESSION_MS,
                    group_consumer_heartbeat_interval_ms=HEARTBEAT_MS) as b:
        with Conn(b, client_id="wire") as c:
            resp = c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
                name=TOPIC, num_partitions=4, replication_factor=1)]), 5)
            assert resp.topics[0].error_code == NONE
        yield b


def _topic_id(broker: MiniBroker) -> uuid.UUID:
    assert broker.metadata_cache is not None
    md = broker.metadata_cache.get_topic(TOPIC)
    assert md is not None
    return md.topic_id


def _join(c: Conn, group: str, member_id: str = "", version: int = 1, **fields: Any) -> Any:
    return c.call(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=0, rebalance_timeout_ms=5000,
        subscribed_topic_names=[TOPIC], topic_partitions=[], **fields), version)


def _heartbeat(c: Conn, group: str, member_id: str, epoch: int, owned: Any = None) -> Any:
    return c.call(ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch,
                                                topic_partitions=owned), 1)


def _owned(topic_id: uuid.UUID, partitions: list[int]) -> list[Any]:
    return [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id, partitions=partitions)]


def _commit(c: Conn, group: str, member_id: str, epoch: int, version: int = 9) -> int:
    r = c.call(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=epoch, member_id=member_id,
                                   topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                                       OffsetCommitRequest.OffsetCommitRequestPartition(
                                           partition_index=0, committed_offset=7)])]), version)
    return int(r.topics[0].partitions[0].error_code)


def _fetch(c: Conn, group: str, member_id: str | None, epoch: int) -> Any:
    r = c.call(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=group, member_id=member_id, member_epoch=epoch, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])]), 9)
    return r.groups[0]


def test_join_heartbeat_commit_and_fencing(broker: MiniBroker) -> None:
    topic_id = _topic_id(broker)
    with Conn(broker, client_id="wire") as c:
        j = _join(c, "cg-1", version=0)  # v0: the coordinator names the member
        assert j.error_code == NONE and j.member_id and j.member_epoch == 1
        assert j.heartbeat_interval_ms == HEARTBEAT_MS
        assert [(tp.topic_id, sorted(tp.partitions)) for tp in j.assignment.topic_partitions] == [
            (topic_id, [0, 1, 2, 3])]
        m1 = j.member_id
        assert _commit(c, "cg-1", m1, 1) == NONE
        # Kafka: a consumer-protocol member must commit with OffsetCommit v9+ (it carries the member epoch)
        assert _commit(c, "cg-1", m1, 1, version=8) == UNSUPPORTED_VERSION
        assert _commit(c, "cg-1", "stranger", 1) == UNKNOWN_MEMBER_ID
        assert _commit(c, "cg-1", "", -1) == UNKNOWN_MEMBER_ID  # a commit from outside a group with members
        g = _fetch(c, "cg-1", m1, 1)
        assert g.error_code == NONE and g.topics[0].partitions[0].committed_offset == 7

        j2 = _join(c, "cg-1", member_id="m2-" + uuid.uuid4().hex)  # v1: the member names itself (KIP-1082)
        assert j2.error_code == NONE and j2.member_epoch == 2
        hb = _heartbeat(c, "cg-1", m1, 1, _owned(topic_id, [0, 1, 2, 3]))
        assert hb.error_code == NONE and hb.member_epoch == 1  # must revoke first: still epoch 1
        kept = sorted(hb.assignment.topic_partitions[0].partitions)
        assert len(kept) == 2
        hb = _heartbeat(c, "cg-1", m1, 1, _owned(topic_id, kept))  # acknowledges the revocation
        assert hb.member_epoch == 2
        assert _commit(c, "cg-1", m1, 1) == STALE_MEMBER_EPOCH
        assert _fetch(c, "cg-1", m1, 1).error_code == STALE_MEMBER_EPOCH
        assert _commit(c, "cg-1", m1, 2) == NONE
        assert _heartbeat(c, "cg-1", m1, 5).error_code == FENCED_MEMBER_EPOCH

        d = c.call(ConsumerGroupDescribeRequest(group_ids=["cg-1", "nope"]), 0)
        described, missing = d.groups
        assert (described.error_code, described.group_state, described.group_epoch, described.assignment_epoch,
                described.assignor_name) == (NONE, "Reconciling", 2, 2, "uniform")
        assert sorted(m.member_id for m in described.members) == sorted([m1, j2.member_id])
        mine = next(m for m in described.members if m.member_id == m1)
        assert mine.subscribed_topic_names == [TOPIC] and mine.member_epoch == 2
        assert sorted(mine.assignment.topic_partitions[0].partitions) == kept
        assert mine.assignment.topic_partitions[0].topic_name == TOPIC
        assert missing.error_code == GROUP_ID_NOT_FOUND

        # the classic APIs: listed as a consumer group, Dead to DescribeGroups; a classic JoinGroup v5 (KIP-394)
        # first gets its member id (it would join as a classic member: the online migration of KIP-848)
        listed = c.call(ListGroupsRequest(types_filter=["consumer"]), 5)
        assert [(g.group_id, g.protocol_type, g.group_type) for g in listed.groups if g.group_id == "cg-1"] == [
            ("cg-1", "consumer", "consumer")]
        classic_only = c.call(ListGroupsRequest(types_filter=["classic"]), 5)
        assert "cg-1" not in [g.group_id for g in classic_only.groups]
        dg = c.call(DescribeGroupsRequest(groups=["cg-1"]), 5).groups[0]
        assert (dg.error_code, dg.group_state, dg.members) == (NONE, "Dead", [])
        jg = c.call(JoinGroupRequest(group_id="cg-1", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                     member_id="", protocol_type="consumer", protocols=[
                                         JoinGroupRequest.JoinGroupRequestProtocol(
                                             name="range", metadata=subscription(TOPIC))]), 5)
        assert jg.error_code == MEMBER_ID_REQUIRED
        assert c.call(DeleteGroupsRequest(groups_names=["cg-1"]), 2).results[0].error_code == NON_EMPTY_GROUP

        for member in (m1, j2.member_id):
            assert _heartbeat(c, "cg-1", member, -1).error_code == NONE
        assert _commit(c, "cg-1", "", -1) == NONE  # no members: a commit from outside the group is allowed
        assert c.call(DeleteGroupsRequest(groups_names=["cg-1"]), 2).results[0].error_code == NONE
        assert "cg-1" not in [g.group_id for g in c.call(ListGroupsRequest(), 5).groups]


def test_a_member_that_stops_heartbeating_is_removed_after_the_session_timeout(broker: MiniBroker) -> None:
    topic_id = _topic_id(broker)
    consumer_groups = broker.group_coordinator.consumer_groups  # type: ignore[union-attr]
    assert consumer_groups is not None
    with Conn(broker, client_id="wire") as c:
        silent = _join(c, "cg-2")
        live = _join(c, "cg-2", member_id="live")
        deadline = time.monotonic() + SESSION_MS / 1000 + 10
        owned: list[int] = []
        while time.monotonic() < deadline:  # only "live" heartbeats
            hb = _heartbeat(c, "cg-2", "live", live.member_epoch, _owned(topic_id, owned))
            assert hb.error_code == NONE
            live = hb
            if hb.assignment is not None:
                owned = sorted(hb.assignment.topic_partitions[0].partitions) if hb.assignment.topic_partitions else []
            if owned == [0, 1, 2, 3]:
                break
            time.sleep(HEARTBEAT_MS / 1000)
        assert owned == [0, 1, 2, 3]
        group = consumer_groups.describe("cg-2")
        assert group is not None and list(group.members) == ["live"]
        assert _heartbeat(c, "cg-2", silent.member_id, silent.member_epoch).error_code == UNKNOWN_MEMBER_ID


def test_txn_offset_commit_checks_the_member_epoch(broker: MiniBroker) -> None:
    """TxnOffsetCommit (KIP-447 member fields) from a consumer group member is checked by member epoch."""
    with Conn(broker, client_id="wire") as c:
        assert _join(c, "cg-txn", member_id="t1").member_epoch == 1

        def txn_commit(member_id: str, epoch: int) -> int:
            r = c.call(TxnOffsetCommitRequest(
                transactional_id="tx", producer_id=4242, producer_epoch=0, group_id="cg-txn", member_id=member_id,
                generation_id=epoch, topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=3)])]), 3)
            return int(r.topics[0].partitions[0].error_code)

        assert txn_commit("nobody", 1) == UNKNOWN_MEMBER_ID
        assert txn_commit("t1", 2) == FENCED_MEMBER_EPOCH
        assert txn_commit("t1", 1) == NONE


def test_with_migration_disabled_the_protocols_do_not_mix() -> None:
    """``group.consumer.migration.policy=disabled``: a ConsumerGroupHeartbeat to a classic group with members
    answers GROUP_ID_NOT_FOUND, a classic JoinGroup to a consumer group with members INCONSISTENT_GROUP_PROTOCOL
    (Kafka's answers when the policy forbids the move)."""
    with MiniBroker(num_network_threads=1, num_io_threads=2, group_initial_rebalance_delay_ms=0,
                    group_consumer_migration_policy="disabled") as b, Conn(b, client_id="wire") as c:
        c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=4, replication_factor=1)]), 5)
        j = _classic_join(c, "classic-1")
        assert j.error_code == NONE
        assert _join(c, "classic-1").error_code == GROUP_ID_NOT_FOUND
        assert _join(c, "consumer-1").error_code == NONE
        assert _classic_join(c, "consumer-1").error_code == INCONSISTENT_GROUP_PROTOCOL


def _classic_join(c: Conn, group: str, member_id: str = "", owned: list[int] | None = None) -> Any:
    """JoinGroup v3 (no KIP-394 round trip) with a ConsumerProtocolSubscription v1 listing ``owned``."""
    sub = serialize_subscription(Subscription([TOPIC], owned_partitions=[TopicPartition(TOPIC, p)
                                                                         for p in owned or []]), 1)
    return c.call(JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                   member_id=member_id, protocol_type="consumer", protocols=[
                                       JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=sub)]), 3)


def _classic_sync(c: Conn, group: str, member_id: str, generation: int,
                  assignments: dict[str, list[int]] | None = None) -> tuple[int, list[int]]:
    r = c.call(SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=serialize_assignment(
            Assignment([TopicPartition(TOPIC, p) for p in ps])))
        for m, ps in (assignments or {}).items()]), 3)
    return r.error_code, sorted(tp.partition for tp in deserialize_assignment(r.assignment).partitions)


def _classic_heartbeat(c: Conn, group: str, member_id: str, generation: int) -> int:
    return int(c.call(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id), 3).error_code)


def test_online_upgrade_then_downgrade_over_the_wire(broker: MiniBroker) -> None:
    """KIP-848 "Upgrade/Downgrade" (Kafka docs, Consumer Rebalance Protocol): a consumer-protocol member joining
    a non-empty classic group converts it; the classic member stays and is told by its Heartbeat
    (REBALANCE_IN_PROGRESS) to rejoin and give up partitions, its SyncGroup then carries the server's assignment;
    when the consumer-protocol member leaves, the group is classic again and rebalances."""
    with Conn(broker, client_id="wire") as c:
        j = _classic_join(c, "mig-1")
        assert j.error_code == NONE and j.leader == j.member_id
        classic_id, gen = j.member_id, j.generation_id
        assert _classic_sync(c, "mig-1", classic_id, gen, {classic_id: [0, 1, 2, 3]}) == (NONE, [0, 1, 2, 3])

        new = _join(c, "mig-1", member_id="new-" + uuid.uuid4().hex)
        assert new.error_code == NONE and new.member_epoch == gen + 1
        assert new.assignment is None or not new.assignment.topic_partitions  # all still owned by the classic one
        d = c.call(ConsumerGroupDescribeRequest(group_ids=["mig-1"]), 0).groups[0]
        assert d.error_code == NONE and sorted(m.member_id for m in d.members) == sorted([classic_id, new.member_id])

        assert _classic_heartbeat(c, "mig-1", classic_id, gen) == REBALANCE_IN_PROGRESS
        rejoined = _classic_join(c, "mig-1", classic_id, owned=[0, 1, 2, 3])  # cooperative: lists what it owns
        assert rejoined.error_code == NONE and rejoined.leader == "" and rejoined.generation_id == gen
        error, kept = _classic_sync(c, "mig-1", classic_id, rejoined.generation_id)
        assert error == NONE and len(kept) == 2
        assert _classic_heartbeat(c, "mig-1", classic_id, gen) == REBALANCE_IN_PROGRESS  # revoke, then rejoin
        rejoined = _classic_join(c, "mig-1", classic_id, owned=kept)
        assert rejoined.generation_id == gen + 1
        assert _classic_sync(c, "mig-1", classic_id, rejoined.generation_id) == (NONE, kept)
        assert _classic_heartbeat(c, "mig-1", classic_id, rejoined.generation_id) == NONE
        hb = _heartbeat(c, "mig-1", new.member_id, new.member_epoch, [])
        got = sorted(hb.assignment.topic_partitions[0].partitions)
        assert sorted(got + kept) == [0, 1, 2, 3]
        assert _commit(c, "mig-1", classic_id, rejoined.generation_id) == NONE  # the member epoch is its generation
        assert _commit(c, "mig-1", classic_id, rejoined.generation_id, version=8) == NONE  # classic: any version
        assert _commit(c, "mig-1", classic_id, gen, version=8) == ILLEGAL_GENERATION

        assert _heartbeat(c, "mig-1", new.member_id, -1).error_code == NONE  # the last consumer member leaves
        listed = c.call(ListGroupsRequest(types_filter=["classic"]), 5)
        assert "mig-1" in [g.group_id for g in listed.groups]
        assert _classic_heartbeat(c, "mig-1", classic_id, rejoined.generation_id + 1) == REBALANCE_IN_PROGRESS
        again = _classic_join(c, "mig-1", classic_id, owned=kept)
        assert again.error_code == NONE and again.leader == classic_id
        assert _classic_sync(c, "mig-1", classic_id, again.generation_id, {classic_id: [0, 1, 2, 3]}) == (
            NONE, [0, 1, 2, 3])


def test_a_restarted_broker_keeps_its_consumer_groups(tmp_path: Any) -> None:
    """The consumer group's records are in ``__consumer_offsets``: after a restart the member heartbeats on with
    its id and epoch (no rejoin) and keeps its partitions."""
    def start() -> MiniBroker:
        return MiniBroker(data_dir=str(tmp_path), num_network_threads=1, num_io_threads=2,
                          group_consumer_heartbeat_interval_ms=HEARTBEAT_MS)

    with start() as b:
        with Conn(b, client_id="wire") as c:
            c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
                name=TOPIC, num_partitions=4, replication_factor=1)]), 5)
            j = _join(c, "cg-restart", member_id="m-restart")
            assert j.error_code == NONE and j.member_epoch == 1
            assert _commit(c, "cg-restart", "m-restart", 1) == NONE
        topic_id = _topic_id(b)
    with start() as b:
        with Conn(b, client_id="wire") as c:
            hb = _heartbeat(c, "cg-restart", "m-restart", 1, _owned(topic_id, [0, 1, 2, 3]))
            assert (hb.error_code, hb.member_epoch) == (NONE, 1)
            d = c.call(ConsumerGroupDescribeRequest(group_ids=["cg-restart"]), 0).groups[0]
            assert d.group_state == "Stable" and [m.member_id for m in d.members] == ["m-restart"]
            assert sorted(d.members[0].assignment.topic_partitions[0].partitions) == [0, 1, 2, 3]
            assert _fetch(c, "cg-restart", "m-restart", 1).topics[0].partitions[0].committed_offset == 7


def test_the_consumer_group_apis_are_authorized() -> None:
    """With Kafka's ACL authorizer and no ACL: ConsumerGroupHeartbeat needs READ on the group and
    ConsumerGroupDescribe DESCRIBE on it (GROUP_AUTHORIZATION_FAILED), as Kafka's KafkaApis checks them."""
    with MiniBroker({"authorizer.class.name": STANDARD_AUTHORIZER}, num_network_threads=1, num_io_threads=2) as b:
        with Conn(b, client_id="wire") as c:
            assert _join(c, "cg-denied").error_code == GROUP_AUTHORIZATION_FAILED
            d = c.call(ConsumerGroupDescribeRequest(group_ids=["cg-denied"]), 0)
            assert d.groups[0].error_code == GROUP_AUTHORIZATION_FAILED


def test_list_groups_filters_by_type_and_state_for_both_types(broker: MiniBroker) -> None:
    """ListGroups v5: the state filter (v4+) applies to classic and consumer groups alike, with the type filter
    (case-insensitive, as Kafka's)."""
    with Conn(broker, client_id="wire") as c:
        assert _classic_join(c, "lg-classic").error_code == NONE  # CompletingRebalance until its SyncGroup
        joined = _join(c, "lg-consumer", member_id="lg-m")
        assert joined.error_code == NONE

        def listed(states: list[str], types: list[str]) -> set[str]:
            r = c.call(ListGroupsRequest(states_filter=states, types_filter=types), 5)
            return {g.group_id for g in r.groups if g.group_id.startswith("lg-")}

        consumer_state = c.call(ConsumerGroupDescribeRequest(group_ids=["lg-consumer"]), 0).groups[0].group_state
        assert listed([consumer_state], []) == {"lg-consumer"}
        assert listed([consumer_state.upper()], ["CONSUMER"]) == {"lg-consumer"}
        assert listed(["CompletingRebalance"], []) == {"lg-classic"}
        assert listed(["CompletingRebalance"], ["consumer"]) == set()
        assert listed([], ["Classic"]) == {"lg-classic"}
        assert listed(["Dead"], []) == set()
        assert _heartbeat(c, "lg-consumer", "lg-m", -1).error_code == NONE
        assert listed(["Empty"], ["consumer"]) == {"lg-consumer"}


def test_an_upgraded_group_survives_a_restart(tmp_path: Any) -> None:
    """The upgrade is written as records: after a restart the classic member of the consumer group heartbeats
    on with its member id and generation, and the consumer member with its epoch."""
    def start() -> MiniBroker:
        return MiniBroker(data_dir=str(tmp_path), num_network_threads=1, num_io_threads=2,
                          group_initial_rebalance_delay_ms=0)

    with start() as b, Conn(b, client_id="wire") as c:
        c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=4, replication_factor=1)]), 5)
        j = _classic_join(c, "mig-r")
        classic_id, gen = j.member_id, j.generation_id
        assert _classic_sync(c, "mig-r", classic_id, gen, {classic_id: [0, 1, 2, 3]})[0] == NONE
        new = _join(c, "mig-r", member_id="new-r")
        assert new.error_code == NONE
    with start() as b, Conn(b, client_id="wire") as c:
        assert _classic_heartbeat(c, "mig-r", classic_id, gen) == REBALANCE_IN_PROGRESS  # known, must revoke
        assert _heartbeat(c, "mig-r", "new-r", new.member_epoch, []).error_code == NONE
        d = c.call(ConsumerGroupDescribeRequest(group_ids=["mig-r"]), 0).groups[0]
        assert sorted(m.member_id for m in d.members) == sorted([classic_id, "new-r"])


def test_a_classic_join_racing_a_downgrade_lands_in_the_group_of_either_type(
        broker: MiniBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's coordinator runtime handles a JoinGroup as one event of the group's partition: it sees the group
    before the online downgrade (a consumer group: joined as a classic member) or after it (a classic group),
    never the conversion half done. Forced interleaving: while the broker routes the JoinGroup of a new classic
    member to the consumer group, the last consumer-protocol member leaves (which downgrades the group). The
    join must not fail (on a check-then-act broker it answered UNKNOWN_MEMBER_ID: the group it had checked was
    gone when it joined)."""
    group = "race-" + uuid.uuid4().hex[:8]
    with Conn(broker, client_id="wire") as c, Conn(broker, client_id="leaver") as leaver:
        j = _classic_join(c, group)
        assert j.error_code == NONE
        assert _classic_sync(c, group, j.member_id, j.generation_id, {j.member_id: [0, 1, 2, 3]})[0] == NONE
        new = _join(c, group, member_id="new-" + uuid.uuid4().hex)
        assert new.error_code == NONE  # upgraded: one consumer-protocol member, one classic member

        coordinator = broker.group_coordinator
        assert coordinator is not None
        validate_join = coordinator.validate_join
        left: list[int] = []
        leaving = threading.Thread(target=lambda: left.append(
            _heartbeat(leaver, group, new.member_id, -1).error_code))

        def racing_validate_join(request: Any) -> int | None:
            leaving.start()
            leaving.join(1.0)  # a broker that holds the group while it routes the join makes the leave wait
            return validate_join(request)

        monkeypatch.setattr(coordinator, "validate_join", racing_validate_join)
        joined = _classic_join(c, group)
        monkeypatch.undo()
        leaving.join(10)
        assert joined.error_code == NONE, f"JoinGroup racing the downgrade failed with {joined.error_code}"
        # the member left, or its session (1.5 s) ended while its leave waited: gone either way
        assert left and left[0] in (NONE, UNKNOWN_MEMBER_ID)
        listed = c.call(ListGroupsRequest(types_filter=["classic"]), 5)
        assert group in [g.group_id for g in listed.groups]  # downgraded after the join, with both classic members


def _classic_leave(c: Conn, group: str, member_id: str) -> int:
    r = c.call(LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id=member_id)]), 3)
    return int(r.error_code or r.members[0].error_code)


def _txn_commit(c: Conn, group: str, member_id: str, generation: int) -> int:
    r = c.call(TxnOffsetCommitRequest(
        transactional_id="tx-race", producer_id=4343, producer_epoch=0, group_id=group, member_id=member_id,
        generation_id=generation, topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=3)])]), 3)
    return int(r.topics[0].partitions[0].error_code)


#: api -> (the consumer-group call the broker routes it by, the request of a classic member: conn, group, member
#: id, generation -> error code)
_ROUTED: dict[str, tuple[str, Callable[[Conn, str, str, int], int]]] = {
    "SyncGroup": ("is_consumer_group", lambda c, g, m, gen: _classic_sync(c, g, m, gen)[0]),
    "Heartbeat": ("is_consumer_group", _classic_heartbeat),
    "LeaveGroup": ("is_consumer_group", lambda c, g, m, gen: _classic_leave(c, g, m)),
    "OffsetCommit": ("validate_offset_commit", _commit),
    "TxnOffsetCommit": ("validate_offset_commit", _txn_commit),
}


def _racing(broker: MiniBroker, monkeypatch: pytest.MonkeyPatch, api: str, conversion: Callable[[], int],
            request: Callable[[Callable[[Conn, str, str, int], int]], int]) -> tuple[int, int]:
    """(the answer to ``request(api's call)``, ``conversion()``'s): ``conversion`` (an online upgrade or
    downgrade, on another connection) runs once the broker has routed the request by the group's type and before
    it acts on it; a broker that holds the group's type while it acts makes the conversion wait."""
    lookup, call = _ROUTED[api]
    consumer_groups = broker.group_coordinator.consumer_groups if broker.group_coordinator else None
    assert consumer_groups is not None
    routed_by = getattr(consumer_groups, lookup)
    converted: list[int] = []
    converting = threading.Thread(target=lambda: converted.append(conversion()))

    def racing(*args: Any) -> Any:
        routed = routed_by(*args)
        if not converting.is_alive() and not converted:  # once: the conversion's own routing goes straight through
            converting.start()
            converting.join(1.0)
        return routed

    monkeypatch.setattr(consumer_groups, lookup, racing)
    answer = request(call)
    monkeypatch.undo()
    converting.join(10)
    assert converted, "the conversion did not finish"
    return answer, converted[0]


@pytest.mark.parametrize("api", list(_ROUTED))
def test_a_classic_request_racing_a_downgrade_is_handled_in_the_group_it_was_routed_to(
        broker: MiniBroker, monkeypatch: pytest.MonkeyPatch, api: str) -> None:
    """Kafka's coordinator shard routes a classic member's SyncGroup, Heartbeat, LeaveGroup, OffsetCommit or
    TxnOffsetCommit by the group's type and handles it in one event: it sees the group before the online downgrade
    (a consumer group, of which it is a classic member) or after it (a classic group, which the downgrade gave
    it), never in between. Forced interleaving: once the broker has routed the request to the consumer group, the
    last consumer-protocol member leaves (which downgrades the group) before the request is acted on. On a broker
    that checks and then acts, the request found the consumer group gone (UNKNOWN_MEMBER_ID; a TxnOffsetCommit
    then went through as one from outside the group, so that case only pins the routing)."""
    group = "race-down-" + api.lower() + "-" + uuid.uuid4().hex[:6]
    with Conn(broker, client_id="wire") as c, Conn(broker, client_id="leaver") as leaver:
        j = _classic_join(c, group)
        assert _classic_sync(c, group, j.member_id, j.generation_id, {j.member_id: [0, 1, 2, 3]})[0] == NONE
        new = _join(c, group, member_id="new-" + uuid.uuid4().hex)
        assert new.error_code == NONE  # upgraded: one consumer-protocol member, one classic member
        assert _classic_heartbeat(c, group, j.member_id, j.generation_id) == REBALANCE_IN_PROGRESS
        rejoined = _classic_join(c, group, j.member_id, owned=[0, 1, 2, 3])
        assert rejoined.error_code == NONE
        if api != "SyncGroup":
            assert _classic_sync(c, group, j.member_id, rejoined.generation_id)[0] == NONE

        answer, left = _racing(broker, monkeypatch, api, lambda: int(
            _heartbeat(leaver, group, new.member_id, -1).error_code),
            lambda call: call(c, group, j.member_id, rejoined.generation_id))
        assert answer in (NONE, REBALANCE_IN_PROGRESS if api == "Heartbeat" else NONE), (
            f"{api} racing the downgrade answered {answer}")
        assert left in (NONE, UNKNOWN_MEMBER_ID)  # it left, or its session (1.5 s) ended while its leave waited
        listed = c.call(ListGroupsRequest(types_filter=["classic"]), 5)
        # downgraded once the request was done; after the classic member's leave no classic member is left to keep
        assert (group in [g.group_id for g in listed.groups]) == (api != "LeaveGroup")


@pytest.mark.parametrize("api", list(_ROUTED))
def test_a_classic_request_racing_an_upgrade_is_handled_in_the_group_it_was_routed_to(
        broker: MiniBroker, monkeypatch: pytest.MonkeyPatch, api: str) -> None:
    """The other direction: a classic group's member sends the request; once the broker has routed it to the
    classic group, a consumer-protocol member joins (which upgrades the group, emptying the classic group) before
    the request is acted on. Kafka handles the request before the upgrade (in the classic group) or after it (in
    the consumer group, of which it is then a classic member); a check-then-act broker found the classic group
    emptied (UNKNOWN_MEMBER_ID)."""
    group = "race-up-" + api.lower() + "-" + uuid.uuid4().hex[:6]
    with Conn(broker, client_id="wire") as c, Conn(broker, client_id="joiner") as joiner:
        j = _classic_join(c, group)
        assert j.error_code == NONE and j.leader == j.member_id
        if api != "SyncGroup":
            assert _classic_sync(c, group, j.member_id, j.generation_id, {j.member_id: [0, 1, 2, 3]})[0] == NONE

        def request(call: Callable[[Conn, str, str, int], int]) -> int:
            if api == "SyncGroup":  # the leader's SyncGroup, with the assignment
                return _classic_sync(c, group, j.member_id, j.generation_id, {j.member_id: [0, 1, 2, 3]})[0]
            return call(c, group, j.member_id, j.generation_id)

        answer, joined = _racing(broker, monkeypatch, api, lambda: int(
            _join(joiner, group, member_id="new-" + uuid.uuid4().hex).error_code), request)
        assert answer == NONE, f"{api} racing the upgrade answered {answer}"
        assert joined == NONE
        listed = c.call(ListGroupsRequest(types_filter=["consumer"]), 5)
        assert group in [g.group_id for g in listed.groups]
