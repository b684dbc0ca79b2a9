"""The share groups' records in ``__consumer_offsets`` (Kafka's share-group coordinator record types), so that
the coordinator that loads the partition (a restart, a failover) finds the groups, their members and
assignments as they were. Same key and value layout as :mod:`mini_broker.group.consumer.records`:

* 10 ShareGroupMemberMetadata ``group, member`` -> rack, client id and host, subscribed topic names
* 11 ShareGroupMetadata ``group`` -> ``group epoch``
* 12 ShareGroupTargetAssignmentMetadata ``group`` -> ``assignment epoch``
* 14 ShareGroupCurrentMemberAssignment ``group, member`` -> member epoch, assigned partitions
* 15 ShareGroupStatePartitionMetadata ``group`` -> the share partitions with state (as an assignment: topic id,
  partitions), then ``n x topic id`` of the topics whose state is being deleted; absent while there are none
* 100 (this broker's own) ``group`` -> ``n x (config name, value)``: the group's ``share.*`` configs
  (:mod:`mini_broker.share.group_configs`; not part of the group's image); a null value removes them all

(13, the target assignment of a member, is the member's current assignment here: share groups do not revoke.)
:func:`group_records` is a group's full image; the consumer records' ``diff`` turns one image into another;
:func:`replay` rebuilds the groups from the live records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mini_broker.group.consumer.records import (
    config_record,
    parsed,
    read_assignment,
    record_key,
    replay_configs,
    value_writer,
    write_assignment,
)
from mini_broker.share.group import ShareGroup, ShareGroupMember
from mini_broker.share.record_types import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_CONFIG,
    GROUP_METADATA,
    MEMBER_METADATA,
    STATE_PARTITION_METADATA,
    TARGET_ASSIGNMENT_METADATA,
)
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.types import Reader, Writer


def group_records(group: ShareGroup) -> dict[bytes, bytes]:
    """Every record of ``group`` (its full image)."""
    gid = group.group_id
    out: dict[bytes, bytes] = {}
    w = value_writer()
    w.write_int32(group.group_epoch)
    out[record_key(GROUP_METADATA, gid)] = w.to_bytes()
    w = value_writer()
    w.write_int32(group.assignment_epoch)
    out[record_key(TARGET_ASSIGNMENT_METADATA, gid)] = w.to_bytes()
    if group.initialized or group.deleting:
        w = value_writer()
        write_assignment(w, group.initialized)
        w.write_int32(len(group.deleting))
        for topic_id in sorted(group.deleting):
            w.write_uuid(topic_id)
        out[record_key(STATE_PARTITION_METADATA, gid)] = w.to_bytes()
    for m in group.members.values():
        w = value_writer()
        w.write_nullable_string(m.rack_id)
        w.write_string(m.client_id)
        w.write_string(m.client_host)
        w.write_int32(len(m.subscribed_topic_names))
        for name in m.subscribed_topic_names:
            w.write_string(name)
        out[record_key(MEMBER_METADATA, gid, m.member_id)] = w.to_bytes()
        w = value_writer()
        w.write_int32(m.member_epoch)
        write_assignment(w, m.assignment)
        out[record_key(CURRENT_MEMBER_ASSIGNMENT, gid, m.member_id)] = w.to_bytes()
    return out


def replay(records: Iterable[tuple[bytes, bytes]]) -> dict[str, ShareGroup]:
    """The groups the live records describe (members without their metadata record are left out). Raises
    ``MessageDecodeError`` for a record that does not parse."""
    groups: dict[str, ShareGroup] = {}
    members: dict[tuple[str, str], ShareGroupMember] = {}
    assignments: dict[tuple[str, str], Reader] = {}
    for record_type, gid, k, v in parsed(records, GROUP_CONFIG, "share group"):
        group = groups.setdefault(gid, ShareGroup(gid))
        if record_type == GROUP_METADATA:
            group.group_epoch = v.read_int32()
        elif record_type == TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = v.read_int32()
        elif record_type == MEMBER_METADATA:
            member_id = k.read_string()
            rack_id, client_id, client_host = v.read_nullable_string(), v.read_string(), v.read_string()
            names = tuple(v.read_string() for _ in range(v.read_array_length(2)))
            members[(gid, member_id)] = ShareGroupMember(member_id, 0, names, rack_id, client_id, client_host)
        elif record_type == CURRENT_MEMBER_ASSIGNMENT:
            assignments[(gid, k.read_string())] = v
        elif record_type == STATE_PARTITION_METADATA:
            group.initialized = dict(read_assignment(v))
            group.deleting = frozenset(v.read_uuid() for _ in range(v.read_array_length(16)))
        else:
            raise MessageDecodeError(f"unknown share group record type {record_type}")
    for (gid, member_id), member in members.items():
        assignment = assignments.get((gid, member_id))
        if assignment is not None:
            member.member_epoch = assignment.read_int32()
            member.assignment = read_assignment(assignment)
        groups[gid].members[member_id] = member
    return groups


def group_config_record(group_id: str, overrides: Mapping[str, str]) -> tuple[bytes, bytes | None]:
    """The record of a share group's configs (a tombstone when it has none left)."""
    return config_record(GROUP_CONFIG, group_id, overrides, Writer.write_string)


def replay_group_configs(records: Iterable[tuple[bytes, bytes]]) -> dict[str, dict[str, str]]:
    """The share groups' configs the live records hold."""
    return replay_configs(records, GROUP_CONFIG, Reader.read_string)
