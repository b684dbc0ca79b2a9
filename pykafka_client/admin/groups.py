"""The AdminClient's consumer group calls (Java ``KafkaAdminClient.listConsumerGroups`` /
``describeConsumerGroups`` / ``deleteConsumerGroups`` / ``listConsumerGroupOffsets`` /
``alterConsumerGroupOffsets``): each to the group's coordinator. (ListGroups, to every broker, is
``handlers/list_consumer_groups.py``.)"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.group_types import (
    ConsumerGroupDescription,
    MemberDescription,
)
from pykafka_client.errors import (
    UnsupportedVersionError,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from pykafka_client.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykafka_client.protocol.types import Reader
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
from pykafka_client.utils.arguments import list_argument, mapping_argument
from pykafka_client.utils.time import Timer


def _assigned_partitions(member_assignment: bytes) -> list[TopicPartition]:
    """The partitions in a consumer-protocol member assignment (int16 version, then the assignment)."""
    if not member_assignment:
        return []
    r = Reader(member_assignment)
    version = min(max(r.read_int16(), 0), 3)
    data = ConsumerProtocolAssignment.read(r, version)
    return sorted(TopicPartition(t.topic, p) for t in data.assigned_partitions for p in t.partitions)


def _one_group(request: Callable[..., Any], field_name: str, group_id: str) -> Callable[[int], Any]:
    """A request builder naming one group in the list field ``field_name`` (the same at every version)."""
    return lambda version: request(**{field_name: [group_id]})


def describe_consumer_groups(
    ctx: AdminContext, group_ids: Iterable[str], timeout: float | None = None,
) -> dict[str, ConsumerGroupDescription]:
    ids = list_argument("describe_consumer_groups", "group_ids", group_ids, str, "a list of group ids, e.g. ['billing']")
    out: dict[str, ConsumerGroupDescription] = {}
    with ctx.lock:
        timer = ctx.timer(timeout)
        for node, resp in _ask_each_coordinator(ctx, ids, ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, "groups", "groups", timer):
            assert isinstance(resp, DescribeGroupsResponse)
            for g in resp.groups:
                if g.error_code:
                    raise broker_error(g.error_code, None, f"group {g.group_id!r}")
                members = [
                    MemberDescription(
                        m.member_id, m.group_instance_id, m.client_id, m.client_host,
                        _assigned_partitions(m.member_assignment) if g.protocol_type == "consumer" else [],
                    )
                    for m in g.members
                ]
                out[g.group_id] = ConsumerGroupDescription(
                    g.group_id, not g.protocol_type, members, g.protocol_data, g.group_state, node
                )
    return out


def delete_consumer_groups(ctx: AdminContext, group_ids: Iterable[str], timeout: float | None = None) -> None:
    ids = list_argument("delete_consumer_groups", "group_ids", group_ids, str, "a list of group ids, e.g. ['billing']")
    first_error: BaseException | None = None
    with ctx.lock:
        timer = ctx.timer(timeout)
        for _, resp in _ask_each_coordinator(ctx, ids, ApiKey.DELETE_GROUPS, DeleteGroupsRequest, "groups_names", "results", timer):
            assert isinstance(resp, DeleteGroupsResponse)
            for r in resp.results:
                if r.error_code:
                    first_error = first_error or broker_error(r.error_code, None, f"group {r.group_id!r}")
    if first_error is not None:
        raise first_error


def list_consumer_group_offsets(
    ctx: AdminContext, group_id: str, partitions: Iterable[tuple[str, int]] | None = None, timeout: float | None = None,
) -> dict[TopicPartition, OffsetAndMetadata]:
    wanted = None if partitions is None else sorted({(tp[0], tp[1]) for tp in partitions})
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in wanted or []:
        by_topic[topic].append(partition)

    def build(version: int) -> OffsetFetchRequest:
        if version < 2 and wanted is None:
            raise UnsupportedVersionError(
                f"the broker supports OffsetFetch v{version} only; asking for all of a group's offsets needs v2 "
                "or later: name the partitions"
            )
        if version >= 8:
            topics8 = None if wanted is None else [
                OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in by_topic.items()
            ]
            return OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id, topics=topics8)])
        topics = None if wanted is None else [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()
        ]
        return OffsetFetchRequest(group_id=group_id, topics=topics)

    def error_of(r: OffsetFetchResponse) -> int:
        return r.groups[0].error_code if r.groups else r.error_code

    with ctx.lock:
        timer = ctx.timer(timeout)
        _, resp = ctx.send_to_coordinator(group_id, ApiKey.OFFSET_FETCH, build, error_of, timer)
        assert isinstance(resp, OffsetFetchResponse)
        if error_of(resp):
            raise broker_error(error_of(resp), None, f"fetching the offsets of group {group_id!r}")
        rows: list[tuple[str, Any]] = (
            [(t.name, p) for g in resp.groups for t in g.topics for p in t.partitions]
            if resp.groups
            else [(t.name, p) for t in resp.topics for p in t.partitions]
        )
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for topic, p in rows:
            if p.error_code:
                raise broker_error(p.error_code, None, f"offset of {topic}-{p.partition_index} in group {group_id!r}")
            if p.committed_offset >= 0:
                epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
                out[TopicPartition(topic, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or "", epoch
                )
        return out


def alter_consumer_group_offsets(
    ctx: AdminContext, group_id: str, offsets: Mapping[tuple[str, int], OffsetAndMetadata | int], timeout: float | None = None,
) -> None:
    mapping_argument(
        "alter_consumer_group_offsets", "offsets", offsets,
        "a mapping of TopicPartition to OffsetAndMetadata, e.g. {TopicPartition('orders', 0): OffsetAndMetadata(42)}",
    )
    if not offsets:
        return
    by_topic: dict[str, list[tuple[int, OffsetAndMetadata]]] = defaultdict(list)
    for tp, o in offsets.items():
        by_topic[tp[0]].append((tp[1], o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)))

    def build(version: int) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id=group_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=o.offset,
                            committed_leader_epoch=-1 if o.leader_epoch is None else o.leader_epoch,
                            committed_metadata=o.metadata,
                        )
                        for p, o in parts
                    ],
                )
                for topic, parts in by_topic.items()
            ],
        )

    def error_of(r: OffsetCommitResponse) -> int:
        return next((p.error_code for t in r.topics for p in t.partitions if p.error_code), 0)

    with ctx.lock:
        timer = ctx.timer(timeout)
        _, resp = ctx.send_to_coordinator(group_id, ApiKey.OFFSET_COMMIT, build, error_of, timer)
        assert isinstance(resp, OffsetCommitResponse)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    raise broker_error(p.error_code, None, f"committing {t.name}-{p.partition_index} for group {group_id!r}")


def _ask_each_coordinator(
    ctx: AdminContext,
    group_ids: list[str],
    api_key: ApiKey,
    request: Callable[..., Any],
    field_name: str,
    results_field: str,
    timer: Timer,
) -> list[tuple[Node, Any]]:
    """Send ``request(field_name=[group_id])`` to each group's coordinator; ``results_field`` names the
    response's per-group list, whose first error code says whether the coordinator moved."""

    def error_of(resp: Any) -> int:
        results = getattr(resp, results_field)
        return int(results[0].error_code) if results else 0

    return [
        ctx.send_to_coordinator(g, api_key, _one_group(request, field_name, g), error_of, timer) for g in group_ids
    ]
