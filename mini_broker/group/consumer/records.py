"""The consumer groups' records in ``__consumer_offsets`` (the record types of Kafka's KIP-848 coordinator),
so that a coordinator that loads the partition (a restart, a failover) finds the groups as they were.

One group is a set of records, the last value per key wins and a null value deletes. The key starts, as the
classic records' keys do, with an int16 record type and the group id; the values use the classic coordinator's
primitives (int16 value version 0 first; strings int16-length-prefixed; uuids 16 bytes) — this broker's own
layout, as Kafka's record schemas are not part of the message specs here:

* 3 ConsumerGroupMetadata ``group`` -> ``group epoch``
* 4 ConsumerGroupPartitionMetadata ``group`` -> ``n x (topic name, topic id, partitions)``: what the last
  target assignment saw of the subscribed topics
* 5 ConsumerGroupMemberMetadata ``group, member`` -> instance id, rack, client id and host, subscribed topic
  names and regex, server assignor, rebalance timeout, then (a classic member of the group, KIP-848 migration)
  its session timeout and JoinGroup protocols (count -1: a consumer-protocol member; absent in older records)
* 6 ConsumerGroupTargetAssignmentMetadata ``group`` -> ``assignment epoch``
* 7 ConsumerGroupTargetAssignmentMember ``group, member`` -> its target partitions
* 8 ConsumerGroupCurrentMemberAssignment ``group, member`` -> member epoch, previous epoch, state, assigned
  partitions, partitions pending revocation
* 9 GroupConfig ``group`` -> ``n x (config name, int64 value)``: the group's own configs (:mod:`group_configs`;
  not part of the group's image: a group id may have configs and no group); a null value removes them all

:func:`group_records` is a group's full image; :func:`diff` the records that turn one image into another (what
the coordinator appends after a change); :func:`replay` rebuilds the groups from the live records.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final, TypeVar

from mini_broker.group.consumer.model import Assignment, ConsumerGroup, ConsumerGroupMember, MemberState, normalize
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.types import Reader, Writer

GROUP_METADATA: Final = 3
PARTITION_METADATA: Final = 4
MEMBER_METADATA: Final = 5
TARGET_ASSIGNMENT_METADATA: Final = 6
TARGET_ASSIGNMENT_MEMBER: Final = 7
CURRENT_MEMBER_ASSIGNMENT: Final = 8
GROUP_CONFIG: Final = 9
#: the key versions (record types) of consumer-group records
CONSUMER_GROUP_KEY_VERSIONS: Final = frozenset({GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA,
                                                TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER,
                                                CURRENT_MEMBER_ASSIGNMENT, GROUP_CONFIG})
VALUE_VERSION: Final = 0
V = TypeVar("V")
_MEMBER_STATES: Final = list(MemberState)


def record_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    w = Writer()
    w.write_int16(record_type)
    w.write_string(group_id)
    if member_id is not None:
        w.write_string(member_id)
    return w.to_bytes()


def value_writer() -> Writer:
    w = Writer()
    w.write_int16(VALUE_VERSION)
    return w


def write_assignment(w: Writer, assignment: Assignment) -> None:
    w.write_int32(len(assignment))
    for topic_id, partitions in sorted(assignment.items()):
        w.write_uuid(topic_id)
        w.write_int32(len(partitions))
        for p in sorted(partitions):
            w.write_int32(p)


def read_assignment(r: Reader) -> dict[uuid.UUID, frozenset[int]]:
    out: dict[uuid.UUID, list[int]] = {}
    for _ in range(r.read_array_length(20)):
        topic_id = r.read_uuid()
        out[topic_id] = [r.read_int32() for _ in range(r.read_array_length(4))]
    return normalize(out)


def _write_classic(w: Writer, m: ConsumerGroupMember) -> None:
    """A classic member's JoinGroup protocols and session timeout (a count of -1: a consumer-protocol member)."""
    w.write_int32(m.classic_session_timeout_ms)
    if m.classic_protocols is None:
        w.write_int32(-1)
        return
    w.write_int32(len(m.classic_protocols))
    for name, data in m.classic_protocols:
        w.write_string(name)
        w.write_bytes(data)


def _read_classic(r: Reader) -> tuple[tuple[tuple[str, bytes], ...] | None, int]:
    session_timeout = r.read_int32()
    n = r.read_int32()
    if n < 0:
        return None, session_timeout
    return tuple((r.read_string(), r.read_bytes()) for _ in range(n)), session_timeout


def group_records(group: ConsumerGroup) -> dict[bytes, bytes]:
    """Every record of ``group`` (its full image)."""
    gid = group.group_id
    out: dict[bytes, bytes] = {}
    w = value_writer()
    w.write_int32(group.group_epoch)
    out[record_key(GROUP_METADATA, gid)] = w.to_bytes()
    w = value_writer()
    w.write_int32(len(group.subscription_metadata))
    for name, (topic_id, partitions) in sorted(group.subscription_metadata.items()):
        w.write_string(name)
        w.write_uuid(topic_id)
        w.write_int32(partitions)
    out[record_key(PARTITION_METADATA, gid)] = w.to_bytes()
    w = value_writer()
    w.write_int32(group.target_assignment_epoch)
    out[record_key(TARGET_ASSIGNMENT_METADATA, gid)] = w.to_bytes()
    for member_id, target in group.target_assignment.items():
        w = value_writer()
        write_assignment(w, target)
        out[record_key(TARGET_ASSIGNMENT_MEMBER, gid, member_id)] = w.to_bytes()
    for m in group.members.values():
        w = value_writer()
        w.write_nullable_string(m.instance_id)
        w.write_nullable_string(m.rack_id)
        w.write_string(m.client_id)
        w.write_string(m.client_host)
        w.write_int32(len(m.subscribed_topic_names))
        for name in m.subscribed_topic_names:
            w.write_string(name)
        w.write_nullable_string(m.subscribed_topic_regex)
        w.write_nullable_string(m.server_assignor_name)
        w.write_int32(m.rebalance_timeout_ms)
        _write_classic(w, m)
        out[record_key(MEMBER_METADATA, gid, m.member_id)] = w.to_bytes()
        w = value_writer()
        w.write_int32(m.member_epoch)
        w.write_int32(m.previous_member_epoch)
        w.write_int8(_MEMBER_STATES.index(m.state))
        write_assignment(w, m.assigned_partitions)
        write_assignment(w, m.partitions_pending_revocation)
        out[record_key(CURRENT_MEMBER_ASSIGNMENT, gid, m.member_id)] = w.to_bytes()
    return out


def config_record(record_type: int, group_id: str, overrides: Mapping[str, V],
                  write: Callable[[Writer, V], None]) -> tuple[bytes, bytes | None]:
    """A record of a group's configs, ``n x (name, write(value))`` (a tombstone when it has none left); the
    consumer groups' (:data:`GROUP_CONFIG`, int64 values) and the share groups' have this layout."""
    if not overrides:
        return record_key(record_type, group_id), None
    w = value_writer()
    w.write_int32(len(overrides))
    for name, value in sorted(overrides.items()):
        w.write_string(name)
        write(w, value)
    return record_key(record_type, group_id), w.to_bytes()


def replay_configs(records: Iterable[tuple[bytes, bytes]], record_type: int,
                   read: Callable[[Reader], V]) -> dict[str, dict[str, V]]:
    """The groups' configs that the live records of ``record_type`` hold (see :func:`config_record`)."""
    out: dict[str, dict[str, V]] = {}
    for key, value in records:
        k = Reader(key)
        if k.read_int16() != record_type:
            continue
        v = Reader(value)
        v.read_int16()
        out[k.read_string()] = {v.read_string(): read(v) for _ in range(v.read_array_length(4))}
    return out


def group_config_record(group_id: str, overrides: Mapping[str, int]) -> tuple[bytes, bytes | None]:
    """The record of a consumer group's configs (a tombstone when it has none left)."""
    return config_record(GROUP_CONFIG, group_id, overrides, Writer.write_int64)


def replay_group_configs(records: Iterable[tuple[bytes, bytes]]) -> dict[str, dict[str, int]]:
    """The consumer groups' configs the live records hold."""
    return replay_configs(records, GROUP_CONFIG, Reader.read_int64)


def diff(before: Mapping[bytes, bytes], after: Mapping[bytes, bytes]) -> list[tuple[bytes, bytes | None]]:
    """The records that turn ``before`` into ``after``: changed or new values, then tombstones."""
    changed: list[tuple[bytes, bytes | None]] = [(k, v) for k, v in after.items() if before.get(k) != v]
    changed += [(k, None) for k in before if k not in after]
    return changed


def parsed(records: Iterable[tuple[bytes, bytes]], configs_type: int,
           kind: str) -> Iterator[tuple[int, str, Reader, Reader]]:
    """(record type, group id, the key's reader after the group id, the value's reader after its version) of
    each record, the groups' config records (``configs_type``: see :func:`replay_configs`) left out. Raises
    ``MessageDecodeError`` for an unknown value version (``kind`` names the records)."""
    for key, value in records:
        k = Reader(key)
        record_type, gid = k.read_int16(), k.read_string()
        if record_type == configs_type:
            continue
        v = Reader(value)
        if v.read_int16() != VALUE_VERSION:
            raise MessageDecodeError(f"{kind} record type {record_type}: unknown value version")
        yield record_type, gid, k, v


def replay(records: Iterable[tuple[bytes, bytes]]) -> dict[str, ConsumerGroup]:
    """The groups the live records (the last value of every key, tombstoned keys left out) describe. Raises
    ``MessageDecodeError`` for a record that does not parse."""
    groups: dict[str, ConsumerGroup] = {}
    metadata: dict[tuple[str, str], ConsumerGroupMember] = {}
    current: dict[tuple[str, str], Reader] = {}
    for record_type, gid, k, v in parsed(records, GROUP_CONFIG, "consumer group"):
        group = groups.setdefault(gid, ConsumerGroup(gid))
        if record_type == GROUP_METADATA:
            group.group_epoch = v.read_int32()
        elif record_type == PARTITION_METADATA:
            for _ in range(v.read_array_length(22)):
                name = v.read_string()
                group.subscription_metadata[name] = (v.read_uuid(), v.read_int32())
        elif record_type == TARGET_ASSIGNMENT_METADATA:
            group.target_assignment_epoch = v.read_int32()
        elif record_type == TARGET_ASSIGNMENT_MEMBER:
            group.target_assignment[k.read_string()] = read_assignment(v)
        elif record_type == MEMBER_METADATA:
            member_id = k.read_string()
            instance_id, rack_id = v.read_nullable_string(), v.read_nullable_string()
            client_id, client_host = v.read_string(), v.read_string()
            names = tuple(v.read_string() for _ in range(v.read_array_length(2)))
            metadata[(gid, member_id)] = ConsumerGroupMember(
                member_id, instance_id=instance_id, rack_id=rack_id, client_id=client_id, client_host=client_host,
                subscribed_topic_names=names, subscribed_topic_regex=v.read_nullable_string(),
                server_assignor_name=v.read_nullable_string(), rebalance_timeout_ms=v.read_int32())
            if v.remaining():  # a classic member (KIP-848 migration); records before the migration end here
                protocols, session_timeout = _read_classic(v)
                metadata[(gid, member_id)] = metadata[(gid, member_id)].with_changes(
                    classic_protocols=protocols, classic_session_timeout_ms=session_timeout)
        elif record_type == CURRENT_MEMBER_ASSIGNMENT:
            current[(gid, k.read_string())] = v
        else:
            raise MessageDecodeError(f"unknown consumer group record type {record_type}")
    for (gid, member_id), member in metadata.items():
        assignment = current.get((gid, member_id))
        if assignment is not None:
            v = assignment
            member = member.with_changes(member_epoch=v.read_int32(), previous_member_epoch=v.read_int32(),
                                         state=_MEMBER_STATES[v.read_int8()],
                                         assigned_partitions=read_assignment(v),
                                         partitions_pending_revocation=read_assignment(v))
        groups[gid].update_member(member)
    return groups
