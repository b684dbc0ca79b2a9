"""The AdminClient's per-partition calls asked of each partition's leader (Java
``KafkaAdminClient.listOffsets`` / ``describeProducers``), retried with fresh metadata while a leader is
stale. (DeleteRecords, which does not retry, is ``handlers/delete_records.py``.)"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.types import (
    IsolationLevel,
    ListOffsetsResultInfo,
    OffsetSpec,
    ProducerState,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.arguments import list_argument, mapping_argument
from pykafka_client.utils.time import Timer

# Partition-level errors after which list_offsets refreshes metadata and retries.
_RETRY_WITH_METADATA = {3, 5, 6, 74, 75, 76}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
# NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, OFFSET_NOT_AVAILABLE


def _take_partition_results(topics: Iterable[Any], remaining: MutableMapping[TopicPartition, Any], asked: Iterable[TopicPartition],
                            store: Callable[[TopicPartition, Any], None]) -> bool:
    """Per-partition answers of a leader: ``store`` each good one and drop it from ``remaining``; raise the
    first error that is not a stale-metadata one. True when some partition must be asked again (stale
    metadata, or no answer for it) after a metadata refresh."""
    retry = False
    for t in topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if tp not in remaining:
                continue
            if p.error_code in _RETRY_WITH_METADATA:
                retry = True
                continue
            if p.error_code:
                raise broker_error(p.error_code, getattr(p, "error_message", None), f"partition {t.name}-{p.partition_index}")
            store(tp, p)
            del remaining[tp]
    # A partition the leader did not answer for: refresh and ask again.
    return retry or any(tp in remaining for tp in asked)


def list_offsets(
    ctx: AdminContext,
    specs: Mapping[tuple[str, int], OffsetSpec],
    timeout: float | None = None,
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[TopicPartition, ListOffsetsResultInfo]:
    mapping_argument(
        "list_offsets", "specs", specs,
        "a mapping of TopicPartition to OffsetSpec, e.g. {TopicPartition('orders', 0): OffsetSpec.latest()}",
    )
    remaining: dict[TopicPartition, OffsetSpec] = {TopicPartition(tp[0], tp[1]): s for tp, s in specs.items()}
    if not remaining:
        return {}
    with ctx.lock:
        timer = ctx.timer(timeout)
        out: dict[TopicPartition, ListOffsetsResultInfo] = {}
        ctx.ask_leaders(
            remaining, timer, "listing offsets",
            lambda leader_id, tps: _list_offsets_from(ctx, leader_id, tps, remaining, out, timer, isolation_level))
        return out


def describe_producers(
    ctx: AdminContext, partitions: Iterable[tuple[str, int]], timeout: float | None = None,
) -> dict[TopicPartition, list[ProducerState]]:
    wanted = list_argument("describe_producers", "partitions", partitions, tuple,
                           "an iterable of TopicPartition, e.g. [TopicPartition('orders', 0)]")
    remaining: dict[TopicPartition, None] = {TopicPartition(tp[0], tp[1]): None for tp in wanted}
    if not remaining:
        return {}
    with ctx.lock:
        timer = ctx.timer(timeout)
        out: dict[TopicPartition, list[ProducerState]] = {}
        ctx.ask_leaders(remaining, timer, "describing producers",
                          lambda leader_id, tps: _describe_producers_from(ctx, leader_id, tps, remaining, out, timer))
        return out


def _list_offsets_from(
    ctx: AdminContext,
    leader_id: int,
    tps: list[TopicPartition],
    remaining: dict[TopicPartition, OffsetSpec],
    out: dict[TopicPartition, ListOffsetsResultInfo],
    timer: Timer,
    isolation_level: IsolationLevel,
) -> bool:
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in tps:
        by_topic[tp[0]].append(tp)

    def build(version: int) -> ListOffsetsRequest:
        if version < 7 and any(remaining[tp].timestamp == OffsetSpec.MAX_TIMESTAMP for tp in tps):
            from pykafka_client.errors import UnsupportedVersionError

            raise UnsupportedVersionError("OffsetSpec.max_timestamp() needs ListOffsets v7 or later")
        return ListOffsetsRequest(
            replica_id=-1,
            isolation_level=int(isolation_level) if version >= 2 else 0,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=tp[1],
                            timestamp=remaining[tp].timestamp,
                            current_leader_epoch=(
                                (ctx.metadata.last_seen_leader_epoch(tp) or -1) if version >= 4 else -1
                            ),
                            max_num_offsets=1,
                        )
                        for tp in parts
                    ],
                )
                for topic, parts in by_topic.items()
            ],
            timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)) if version >= 10 else 60_000,
        )

    _, resp = ctx.send(ApiKey.LIST_OFFSETS, build, ctx.broker_target(leader_id), timer)
    assert isinstance(resp, ListOffsetsResponse)

    def store(tp: TopicPartition, p: ListOffsetsResponse.ListOffsetsPartitionResponse) -> None:
        offset = p.offset
        if not offset and p.old_style_offsets:
            offset = p.old_style_offsets[0]
        out[tp] = ListOffsetsResultInfo(offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)

    return _take_partition_results(resp.topics, remaining, tps, store)


def _describe_producers_from(
    ctx: AdminContext,
    leader_id: int,
    tps: list[TopicPartition],
    remaining: dict[TopicPartition, None],
    out: dict[TopicPartition, list[ProducerState]],
    timer: Timer,
) -> bool:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in tps:
        by_topic[tp[0]].append(tp[1])
    request = DescribeProducersRequest(topics=[
        DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
    _, resp = ctx.send(ApiKey.DESCRIBE_PRODUCERS, lambda _v: request, ctx.broker_target(leader_id), timer)
    assert isinstance(resp, DescribeProducersResponse)

    def store(tp: TopicPartition, p: DescribeProducersResponse.PartitionResponse) -> None:
        out[tp] = [ProducerState(
            producer_id=s.producer_id, producer_epoch=s.producer_epoch, last_sequence=s.last_sequence,
            last_timestamp=s.last_timestamp,
            coordinator_epoch=s.coordinator_epoch if s.coordinator_epoch >= 0 else None,
            current_transaction_start_offset=(
                s.current_txn_start_offset if s.current_txn_start_offset >= 0 else None))
            for s in p.active_producers]

    return _take_partition_results(resp.topics, remaining, tps, store)
