"""KIP-848's online migration between classic and consumer groups, on the classic coordinator and the consumer
groups sharing one runtime (MockTime, inline timers).

The rules, as Kafka documents them (docs "Consumer Rebalance Protocol", section "Upgrade & Downgrade",
https://kafka.apache.org/40/operations/consumer-rebalance-protocol, and KIP-848's "Upgrade/Downgrade"):

* online upgrade: the first member using the consumer protocol that joins a non-empty classic group converts it
  to a consumer group; the classic members stay, as classic members of the consumer group, and keep using
  JoinGroup/SyncGroup/Heartbeat: the coordinator computes their assignments and tells them to rejoin
  (REBALANCE_IN_PROGRESS) when they must revoke or gain partitions;
* online downgrade: when the last member using the consumer protocol leaves a group whose other members use the
  classic protocol, the group is converted back to a classic group (which rebalances);
* ``group.consumer.migration.policy`` (bidirectional by default; upgrade, downgrade, disabled) says which
  conversions happen (KAFKA-16294); a refused upgrade answers the ConsumerGroupHeartbeat GROUP_ID_NOT_FOUND, a
  classic JoinGroup to a consumer group with members INCONSISTENT_GROUP_PROTOCOL when migration is disabled;
* the conversion keeps the classic generation as the consumer group's epoch and each member's assignment as
  its target (Kafka's ``ConsumerGroup.fromClassicGroup``; KAFKA-21582 describes it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from mini_broker.group import JoinGroupParams, JoinGroupResult, LeaveMember, SyncGroupParams
from mini_broker.group.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupHeartbeatParams,
    records,
)
from mini_broker.group.consumer.model import TopicInfo, TopicsImage
from mini_broker.group.group_metadata_manager import group_metadata_key
from mini_broker.group.group_requests import HeartbeatParams
from mini_broker.group.group_state import GroupState
from pykafka_client.consumer.assignors.abstract_assignor import Assignment
from pykafka_client.consumer.consumer_protocol import deserialize_assignment, serialize_assignment
from pykafka_client.errors import (
    GroupIdNotFoundError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    RebalanceInProgressError,
    UnsupportedVersionError,
)
from pykafka_client.protocol.records import MemoryRecords
from pykafka_client.structs import TopicPartition
from tests.unit.broker.group.consumer.helpers import heartbeat
from tests.unit.broker.group.harness import GROUP, PROTOCOLS, REBALANCE_MS, SESSION_MS, Box, Harness

T_ID = uuid.UUID(int=7)
TOPICS = TopicsImage.of([TopicInfo(T_ID, "t", 4)])


class Migration:
    """A classic coordinator hosting consumer groups with ``policy``."""

    def __init__(self, policy: str = "bidirectional") -> None:
        self.h = Harness()
        self.consumer = ConsumerGroupCoordinator(ConsumerGroupConfig(migration_policy=policy),
                                                 self.h.coordinator.runtime, lambda: TOPICS, self.h.time)
        self.h.coordinator.consumer_groups = self.consumer
        self.consumer.startup()

    def classic_group(self) -> tuple[str, str, int]:
        """A Stable classic group: the leader owns t-0, t-1, the follower t-2, t-3. (leader, follower, gen)."""
        ids = self.h.stable_group(2)
        leader, follower = ids
        gen = self.h.group().generation_id
        # the leader's sync stored the assignment at stable_group; store a real one with a new round
        assert self.h.heartbeat(leader, gen) == 0
        self.h.group().get(leader).assignment = _assignment(0, 1)
        self.h.group().get(follower).assignment = _assignment(2, 3)
        return leader, follower, gen

    def consumer_join(self, member_id: str = "") -> tuple[int, str, int, frozenset[int]]:
        r = heartbeat(self.consumer, ConsumerGroupHeartbeatParams(
            GROUP, member_id, 0, rebalance_timeout_ms=REBALANCE_MS, subscribed_topic_names=("t",),
            owned_partitions={}))
        return r.error_code, r.member_id or "", r.member_epoch, (r.assignment or {}).get(T_ID, frozenset())

    def consumer_heartbeat(self, member_id: str, epoch: int, owned: frozenset[int]) -> tuple[int, int, frozenset[int]]:
        r = heartbeat(self.consumer, ConsumerGroupHeartbeatParams(
            GROUP, member_id, epoch, owned_partitions={T_ID: owned} if owned else {}))
        assigned = r.assignment.get(T_ID, frozenset()) if r.assignment is not None else owned
        return r.error_code, r.member_epoch, assigned

    def classic_join(self, member_id: str) -> JoinGroupResult:
        box: Box[JoinGroupResult] = Box()
        self.consumer.classic_join(JoinGroupParams(GROUP, member_id, "consumer", PROTOCOLS, SESSION_MS,
                                                   REBALANCE_MS, client_id="client"), box)
        return box.value

    def classic_sync(self, member_id: str, generation: int) -> tuple[int, set[int]]:
        r = self.consumer.classic_sync(SyncGroupParams(GROUP, generation, member_id, protocol_type="consumer",
                                                       protocol_name="range"))
        return r.error_code, {tp.partition for tp in deserialize_assignment(r.assignment).partitions}


def _assignment(*partitions: int) -> bytes:
    return serialize_assignment(Assignment([TopicPartition("t", p) for p in partitions]), 0)


@pytest.fixture
def m() -> Iterator[Migration]:
    migration = Migration()
    yield migration
    migration.h.close()


def test_a_consumer_member_upgrades_a_classic_group_and_the_classic_members_revoke_by_rejoining(
        m: Migration) -> None:
    """Upgrade: the joining consumer-protocol member converts the group; the classic members keep their
    partitions (the classic generation becomes the epoch) until the coordinator's new target asks them to
    revoke, which their Heartbeat learns as REBALANCE_IN_PROGRESS; after their JoinGroup/SyncGroup (the
    assignment computed by the server assignor) the new member gets the released partitions. No partition is
    ever owned twice."""
    leader, follower, gen = m.classic_group()
    error, new_id, epoch, assigned = m.consumer_join()
    assert error == 0
    assert m.consumer.is_consumer_group(GROUP)
    assert m.h.group().is_empty() and m.h.group().is_state(GroupState.EMPTY)  # keeps the offsets only
    assert assigned == frozenset()  # every partition is still owned by a classic member
    described = m.consumer.describe(GROUP)
    assert described is not None and described.group_epoch == gen + 1
    assert described.members[leader].member_epoch == gen
    owned: dict[str, set[int]] = {}
    for member in (leader, follower):
        assert m.consumer.classic_heartbeat(HeartbeatParams(GROUP, member, gen)) == RebalanceInProgressError.code
        joined = m.classic_join(member)
        assert joined.error_code == 0 and joined.leader_id == "" and joined.protocol_name == "range"
        error, owned[member] = m.classic_sync(member, joined.generation_id)
        assert error == 0
        assert m.consumer.classic_heartbeat(HeartbeatParams(GROUP, member, joined.generation_id)) == 0
    error, epoch, mine = m.consumer_heartbeat(new_id, epoch, assigned)
    assert error == 0 and mine
    assert not (owned[leader] & owned[follower]) and not (mine & (owned[leader] | owned[follower]))
    assert owned[leader] | owned[follower] | set(mine) == {0, 1, 2, 3}
    assert m.consumer.classic_heartbeat(HeartbeatParams(GROUP, leader, gen)) == IllegalGenerationError.code


def test_the_last_consumer_member_leaving_downgrades_the_group_which_rebalances(m: Migration) -> None:
    """Downgrade: once the only consumer-protocol member leaves (epoch -1), the classic members form a classic
    group again at the consumer group's epoch, which rebalances: their Heartbeat answers REBALANCE_IN_PROGRESS,
    and their JoinGroups complete a classic join round with a leader."""
    leader, follower, _ = m.classic_group()
    _, new_id, _, _ = m.consumer_join()
    group_epoch = m.consumer.describe(GROUP).group_epoch  # type: ignore[union-attr]
    r = heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, new_id, -1))
    assert r.error_code == 0
    assert not m.consumer.is_consumer_group(GROUP)
    group = m.h.group()
    assert set(group.members) == {leader, follower}
    assert group.is_state(GroupState.PREPARING_REBALANCE)
    assert group.generation_id == group_epoch + 1  # the group's epoch after the leave, then the join round
    assert m.h.heartbeat(leader, group_epoch + 1) == RebalanceInProgressError.code
    joins = [m.h.join(leader), m.h.join(follower)]
    assert all(j.value.error_code == 0 for j in joins)
    assert {j.value.leader_id for j in joins} == {leader}


def test_the_last_consumer_member_expiring_also_downgrades(m: Migration) -> None:
    """The downgrade also follows the session expiry of the last consumer-protocol member (it left the group);
    the classic members, heartbeating, come back as the classic group's members."""
    leader, follower, _ = m.classic_group()
    m.consumer_join()
    session_ms = ConsumerGroupConfig().session_timeout_ms
    for _ in range(session_ms // 5000 + 1):
        m.h.time.sleep(5000)
        for member in (leader, follower):
            described = m.consumer.describe(GROUP)
            if described is not None:
                epoch = described.members[member].member_epoch
                m.consumer.classic_heartbeat(HeartbeatParams(GROUP, member, epoch))
        m.consumer.expire_members()
    assert not m.consumer.is_consumer_group(GROUP)
    assert set(m.h.group().members) == {leader, follower}


def test_a_classic_member_leaves_a_consumer_group_with_leave_group(m: Migration) -> None:
    """LeaveGroup of a classic member of a consumer group removes it and moves the group epoch."""
    leader, _, _ = m.classic_group()
    m.consumer_join()
    epoch = m.consumer.describe(GROUP).group_epoch  # type: ignore[union-attr]
    [result] = m.consumer.classic_leave(GROUP, [LeaveMember(leader)])
    assert result.error_code == 0
    described = m.consumer.describe(GROUP)
    assert described is not None and leader not in described.members and described.group_epoch == epoch + 1


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_a_policy_without_upgrade_answers_group_id_not_found(policy: str) -> None:
    """``group.consumer.migration.policy`` without upgrade: the classic group stays, the heartbeat is refused as
    Kafka refuses it (GROUP_ID_NOT_FOUND)."""
    m = Migration(policy)
    try:
        leader, _, gen = m.classic_group()
        error, *_ = m.consumer_join()
        assert error == GroupIdNotFoundError.code
        assert not m.consumer.is_consumer_group(GROUP)
        assert m.h.heartbeat(leader, gen) == 0
    finally:
        m.h.close()


def test_disabled_migration_refuses_a_classic_member_in_a_consumer_group() -> None:
    """``disabled``: a classic JoinGroup to a consumer group with members answers INCONSISTENT_GROUP_PROTOCOL."""
    m = Migration("disabled")
    try:
        assert m.consumer_join()[0] == 0
        assert m.classic_join("").error_code == InconsistentGroupProtocolError.code
    finally:
        m.h.close()


def test_upgrade_only_policy_keeps_a_consumer_group_of_classic_members() -> None:
    """``upgrade``: the last consumer-protocol member leaving does not convert the group back."""
    m = Migration("upgrade")
    try:
        m.classic_group()
        _, new_id, _, _ = m.consumer_join()
        heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, new_id, -1))
        assert m.consumer.is_consumer_group(GROUP)
        assert m.h.group().is_empty()
    finally:
        m.h.close()


def test_classic_members_are_kept_by_the_records(m: Migration) -> None:
    """The conversion is written as records: replaying the group's records (a restart, a failover) gives back
    its classic members with their protocols and session timeouts, so they can keep heartbeating."""
    leader, _, _ = m.classic_group()
    m.consumer_join()
    described = m.consumer.describe(GROUP)
    assert described is not None
    replayed = records.replay(records.group_records(described).items())[GROUP]
    member = replayed.members[leader]
    assert member.classic_protocols == tuple(PROTOCOLS)
    assert member.classic_session_timeout_ms == SESSION_MS
    assert member.assigned_partitions == described.members[leader].assigned_partitions
    consumer_member = next(mm for mm in replayed.members.values() if not mm.uses_classic_protocol)
    assert consumer_member.classic_protocols is None


def test_offset_commit_versions_and_generations_in_a_mixed_group(m: Migration) -> None:
    """Kafka's ``ConsumerGroup.validateOffsetCommit``: a consumer-protocol member must use OffsetCommit v9+
    (UNSUPPORTED_VERSION below; a TxnOffsetCommit is not held to it), a classic member of the consumer group
    commits with any version and its member epoch as generation (else ILLEGAL_GENERATION)."""
    leader, _, gen = m.classic_group()
    _, new_id, epoch, _ = m.consumer_join()
    assert m.consumer.validate_offset_commit(GROUP, new_id, epoch, 8) == UnsupportedVersionError.code
    assert m.consumer.validate_offset_commit(GROUP, new_id, epoch, 9) == 0
    assert m.consumer.validate_offset_commit(GROUP, new_id, epoch, None) == 0
    assert m.consumer.validate_offset_commit(GROUP, leader, gen, 2) == 0
    assert m.consumer.validate_offset_commit(GROUP, leader, gen + 5, 9) == IllegalGenerationError.code


def test_consumer_group_offsets_expire_by_kafkas_rule_and_an_empty_group_is_deleted(m: Migration) -> None:
    """Kafka's offset expiration for consumer groups: offsets of a topic the group subscribes to never expire;
    others expire ``offsets.retention.minutes`` after their commit; once the group is empty and its offsets are
    gone, the group itself is deleted (``cleanupGroupMetadata``)."""
    _, member, epoch, _ = m.consumer_join()
    assert m.h.commit("", -1, {("t", 0): 5, ("gone", 0): 9}) == {("t", 0): 0, ("gone", 0): 0}
    retention = m.h.coordinator.config.offsets_retention_ms
    m.h.time.sleep(retention + 1)
    heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, member, epoch))  # still alive
    m.h.coordinator.cleanup_group_metadata()
    assert m.h.fetch([("t", 0), ("gone", 0)]) == {("t", 0): 5, ("gone", 0): -1}
    heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, member, -1))
    m.h.coordinator.cleanup_group_metadata()  # not subscribed any more: the offset is past retention
    assert m.h.fetch([("t", 0)]) == {("t", 0): -1}
    assert not m.consumer.is_consumer_group(GROUP)


def test_an_upgrade_during_a_rebalance_answers_the_parked_joins(m: Migration) -> None:
    """A classic group in the middle of a join round is converted too: the parked JoinGroup is answered
    REBALANCE_IN_PROGRESS (its member rejoins, now into the consumer group), and the members keep the partitions
    of the last generation until they rejoin."""
    leader, follower, _ = m.classic_group()
    parked = m.h.join(leader)  # starts a join round; the follower has not rejoined
    assert not parked.done and m.h.group().is_state(GroupState.PREPARING_REBALANCE)
    assert m.consumer_join()[0] == 0
    assert parked.value.error_code == RebalanceInProgressError.code
    described = m.consumer.describe(GROUP)
    assert described is not None
    assert described.members[follower].assigned_partitions == {T_ID: frozenset({2, 3})}
    assert m.classic_join(leader).error_code == 0


def test_no_downgrade_beyond_the_classic_group_max_size() -> None:
    """Kafka does not downgrade a consumer group whose members exceed the classic ``group.max.size``."""
    m = Migration()
    try:
        m.classic_group()
        _, new_id, _, _ = m.consumer_join()
        m.h.coordinator.config = replace(m.h.coordinator.config, group_max_size=1)
        heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, new_id, -1))
        assert m.consumer.is_consumer_group(GROUP)
    finally:
        m.h.close()


def test_a_static_consumer_member_restarting_as_a_classic_one_keeps_its_partitions_and_downgrades(
        m: Migration) -> None:
    """A static member (same ``group.instance.id``) that comes back with the classic protocol takes over its
    predecessor's epoch and partitions, with no new target assignment (KAFKA-19546: when it was the last
    consumer-protocol member, the group is downgraded)."""
    m.classic_group()
    r = heartbeat(m.consumer, ConsumerGroupHeartbeatParams(
        GROUP, "static-new", 0, instance_id="inst", rebalance_timeout_ms=REBALANCE_MS, subscribed_topic_names=("t",),
        owned_partitions={}))
    assert r.error_code == 0
    described = m.consumer.describe(GROUP)
    assert described is not None
    for classic in [x.member_id for x in described.members.values() if x.uses_classic_protocol]:
        m.classic_join(classic)  # they revoke (eager): the new static member's share is free
    owned = heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, "static-new", r.member_epoch,
                                                               owned_partitions={})).assignment
    epoch_before = m.consumer.describe(GROUP).group_epoch  # type: ignore[union-attr]
    heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, "static-new", -2, instance_id="inst"))
    box: Box[JoinGroupResult] = Box()
    m.consumer.classic_join(JoinGroupParams(GROUP, "", "consumer", PROTOCOLS, SESSION_MS, REBALANCE_MS,
                                            group_instance_id="inst", client_id="client"), box)
    assert box.value.error_code == 0
    assert not m.consumer.is_consumer_group(GROUP)  # downgraded: every member is classic now
    group = m.h.group()
    assert box.value.member_id in group.members and "static-new" not in group.members
    assert group.generation_id == epoch_before  # the replacement did not move the epoch
    kept = deserialize_assignment(group.get(box.value.member_id).assignment).partitions
    assert {tp.partition for tp in kept} == set((owned or {}).get(T_ID, frozenset()))


def test_a_leave_and_the_downgrade_it_causes_are_written_as_one_batch(m: Migration,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka writes the leave of the last consumer-protocol member and the conversion back to a classic group it
    causes as one atomic batch: the consumer group's tombstones (the leaving member's records among them) and the
    classic group's record, so that no failover can find the group with the member gone but not converted, as
    neither type (its tombstones replicated without the classic record) or as both."""
    m.classic_group()
    _, new_id, _, _ = m.consumer_join()
    described = m.consumer.describe(GROUP)
    assert described is not None
    consumer_keys = set(records.group_records(described))
    partition = m.h.coordinator.runtime.partition
    original = partition.append
    batches: list[list[tuple[bytes, bool]]] = []

    def recording(records: bytes, flush: bool = False) -> None:
        batches.append([(bytes(r.key or b""), r.value is None) for r in MemoryRecords(records).records()])
        original(records, flush)

    monkeypatch.setattr(partition, "append", recording)
    assert heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, new_id, -1)).error_code == 0
    assert not m.consumer.is_consumer_group(GROUP)
    assert len(batches) == 1, f"the leave and the downgrade were written as {len(batches)} batches"
    (batch,) = batches
    assert (group_metadata_key(GROUP), False) in batch  # the classic group's record
    assert consumer_keys <= {k for k, is_tombstone in batch if is_tombstone}  # every consumer-group record ends


def test_a_downgrade_whose_append_fails_keeps_the_consumer_group(m: Migration,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch of the leave and the conversion not written (the partition refused it): the group stays the
    consumer group it was before the leave, the leaving member in it, as Kafka's reverted timeline has it; the
    leaving member is told NOT_COORDINATOR (it finds the coordinator again and retries its leave). The classic
    coordinator does not keep the members it was to adopt (the group would be both types)."""
    leader, follower, _ = m.classic_group()
    _, new_id, _, _ = m.consumer_join()
    partition = m.h.coordinator.runtime.partition
    original = partition.append

    def refuse_the_conversion(records: bytes, flush: bool = False) -> None:
        if any(r.key == group_metadata_key(GROUP) for r in MemoryRecords(records).records()):
            raise NotLeaderOrFollowerError("this broker no longer leads __consumer_offsets-0")
        original(records, flush)

    monkeypatch.setattr(partition, "append", refuse_the_conversion)
    assert heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, new_id, -1)).error_code == \
        NotCoordinatorError.code
    described = m.consumer.describe(GROUP)
    assert described is not None and sorted(described.members) == sorted([leader, follower, new_id])
    classic = m.h.coordinator.get_group(GROUP)
    assert classic is None or (classic.is_empty() and classic.is_state(GroupState.EMPTY))
    monkeypatch.undo()  # the leave retried: the downgrade now goes through, to the classic members
    assert heartbeat(m.consumer, ConsumerGroupHeartbeatParams(GROUP, new_id, -1)).error_code == 0
    assert not m.consumer.is_consumer_group(GROUP)
    assert sorted(m.h.group().members) == sorted([leader, follower])


def test_an_upgrade_is_written_as_one_batch(m: Migration, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka converts a classic group to a consumer group in one atomic write: the classic group's record (now
    Empty, keeping the offsets) and the consumer group's records in one batch; when the append fails, neither is
    written (a reloading coordinator finds the classic group as it was) and the consumer group is not served."""
    m.classic_group()
    partition = m.h.coordinator.runtime.partition
    original = partition.append
    batches: list[set[bytes]] = []

    def recording(records: bytes, flush: bool = False) -> None:
        batches.append({bytes(r.key or b"") for r in MemoryRecords(records).records()})
        original(records, flush)

    monkeypatch.setattr(partition, "append", recording)
    error, _, _, _ = m.consumer_join()
    assert error == 0 and m.consumer.is_consumer_group(GROUP)
    described = m.consumer.describe(GROUP)
    assert described is not None
    consumer_keys = set(records.group_records(described))
    assert len(batches) == 1 and group_metadata_key(GROUP) in batches[0] and consumer_keys <= batches[0]


def test_an_upgrade_whose_append_fails_serves_no_consumer_group(monkeypatch: pytest.MonkeyPatch) -> None:
    m = Migration()
    try:
        m.classic_group()

        def refuse(records: bytes, flush: bool = False) -> None:
            raise NotLeaderOrFollowerError("this broker no longer leads __consumer_offsets-0")

        monkeypatch.setattr(m.h.coordinator.runtime.partition, "append", refuse)
        error, _, _, _ = m.consumer_join()
        assert error == NotCoordinatorError.code
        assert not m.consumer.is_consumer_group(GROUP)
    finally:
        monkeypatch.undo()
        m.h.close()
