"""Classic members of a consumer group (KIP-848's online migration), sans-IO helpers: reading a JoinGroup's
ConsumerProtocolSubscription, writing a SyncGroup's ConsumerProtocolAssignment, and converting a whole group
between the classic snapshot (:mod:`mini_broker.group.group_migration`) and a :class:`ConsumerGroup`.

Kafka's conversion of a classic group keeps its generation: the consumer group's epoch, its target assignment
epoch and every member's epoch are the classic generation, and every member's assignment (and target) is the
one the classic leader gave it. The member that triggered the upgrade then joins, which moves the group epoch
and computes a new target with the server assignor.
"""

from __future__ import annotations

import uuid

from mini_broker.group.consumer.model import Assignment, ConsumerGroup, ConsumerGroupMember, TopicsImage, normalize
from mini_broker.group.migration_snapshot import ClassicGroupSnapshot, ClassicMemberSnapshot
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykafka_client.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from pykafka_client.protocol.types import Reader, Writer

#: the ConsumerProtocolAssignment version the coordinator writes (every classic consumer reads it)
ASSIGNMENT_VERSION = 0
_LATEST_SUBSCRIPTION_VERSION = 3


def parse_subscription(metadata: bytes, topics: TopicsImage) -> tuple[tuple[str, ...], Assignment]:
    """(subscribed topic names, owned partitions by topic id) of a ConsumerProtocolSubscription; owned
    partitions of topics the broker does not have are left out. Raises MessageDecodeError."""
    r = Reader(metadata)
    version = r.read_int16()
    if version < 0:
        raise MessageDecodeError(f"ConsumerProtocolSubscription version {version} is invalid", 0)
    data = ConsumerProtocolSubscription.read(r, min(version, _LATEST_SUBSCRIPTION_VERSION))
    owned: dict[uuid.UUID, set[int]] = {}
    for tp in data.owned_partitions or []:
        info = topics.by_name.get(tp.topic)
        if info is not None:
            owned.setdefault(info.topic_id, set()).update(tp.partitions)
    return tuple(sorted(set(data.topics))), normalize(owned)


def encode_assignment(assignment: Assignment, topics: TopicsImage) -> bytes:
    """A ConsumerProtocolAssignment of ``assignment`` by topic name (topics the broker lost are left out)."""
    by_name: list[ConsumerProtocolAssignment.TopicPartition] = []
    for topic_id, partitions in sorted(assignment.items()):
        info = topics.by_id(topic_id)
        if info is not None:
            by_name.append(ConsumerProtocolAssignment.TopicPartition(info.name, sorted(partitions)))
    w = Writer()
    w.write_int16(ASSIGNMENT_VERSION)
    ConsumerProtocolAssignment(assigned_partitions=by_name, user_data=None).write(w, ASSIGNMENT_VERSION)
    return w.to_bytes()


def decode_assignment(data: bytes, topics: TopicsImage) -> Assignment:
    """A ConsumerProtocolAssignment by topic id (empty bytes, or bytes that do not parse: nothing)."""
    if not data:
        return {}
    try:
        r = Reader(data)
        version = r.read_int16()
        parsed = ConsumerProtocolAssignment.read(r, min(max(version, 0), 3))
    except Exception:
        return {}
    out: dict[uuid.UUID, set[int]] = {}
    for tp in parsed.assigned_partitions:
        info = topics.by_name.get(tp.topic)
        if info is not None:
            out.setdefault(info.topic_id, set()).update(tp.partitions)
    return normalize(out)


def subscription_of(protocols: tuple[tuple[str, bytes], ...], protocol_name: str | None,
                    topics: TopicsImage) -> tuple[tuple[str, ...], Assignment]:
    """The subscription a classic member's protocols carry: the group's protocol when it names one the member
    has, else the member's first (the subscriptions of one consumer are the same in all its protocols)."""
    chosen = next((data for name, data in protocols if name == protocol_name), protocols[0][1])
    return parse_subscription(chosen, topics)


def consumer_group_from_classic(snapshot: ClassicGroupSnapshot, topics: TopicsImage, now: int) -> ConsumerGroup:
    """The consumer group a classic group becomes (see the module docstring)."""
    epoch = snapshot.generation_id
    group = ConsumerGroup(snapshot.group_id, group_epoch=epoch, target_assignment_epoch=epoch)
    for m in snapshot.members:
        try:
            names, _ = subscription_of(m.protocols, snapshot.protocol_name, topics)
        except MessageDecodeError:
            names = ()
        assigned = decode_assignment(m.assignment, topics)
        group.update_member(ConsumerGroupMember(
            m.member_id, member_epoch=epoch, previous_member_epoch=epoch - 1, instance_id=m.instance_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=names, assigned_partitions=assigned, classic_protocols=m.protocols,
            classic_session_timeout_ms=m.session_timeout_ms))
        group.target_assignment[m.member_id] = assigned
        group.session_deadlines[m.member_id] = now + m.session_timeout_ms
    return group


def classic_snapshot(group: ConsumerGroup, topics: TopicsImage) -> ClassicGroupSnapshot:
    """The classic group a consumer group of classic members only becomes: its epoch is the generation, each
    member keeps the partitions it owns."""
    members = tuple(
        ClassicMemberSnapshot(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                              m.classic_session_timeout_ms, m.classic_protocols or (),
                              encode_assignment(m.assigned_partitions, topics))
        for m in group.members.values())
    return ClassicGroupSnapshot(group.group_id, group.group_epoch, None, members)
