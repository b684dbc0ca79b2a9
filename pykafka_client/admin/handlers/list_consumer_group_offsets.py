"""OffsetFetch (Java ``KafkaAdminClient.listConsumerGroupOffsets``): to the group's coordinator."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetFetchRequest, OffsetFetchResponse
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition


@dataclass
class ListConsumerGroupOffsetsHandler:
    """One key, the group id; ``wanted`` the partitions asked for (None: all of the group's)."""

    wanted: list[tuple[str, int]] | None
    by_topic: dict[str, list[int]] = field(init=False, default_factory=lambda: defaultdict(list))
    api_key = ApiKey.OFFSET_FETCH
    lookup = GROUP_COORDINATOR

    def __post_init__(self) -> None:
        for topic, partition in self.wanted or []:
            self.by_topic[topic].append(partition)

    def build_request(self, version: int, keys: list[str]) -> OffsetFetchRequest:
        (group_id,) = keys
        if version < 2 and self.wanted is None:
            raise UnsupportedVersionError(
                f"the broker supports OffsetFetch v{version} only; asking for all of a group's offsets needs v2 "
                "or later: name the partitions"
            )
        if version >= 8:
            topics8 = None if self.wanted is None else [
                OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=p)
                for t, p in self.by_topic.items()
            ]
            return OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id,
                                                                                         topics=topics8)])
        topics = None if self.wanted is None else [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in self.by_topic.items()
        ]
        return OffsetFetchRequest(group_id=group_id, topics=topics)

    def handle_response(self, node: Node, keys: list[str], response: OffsetFetchResponse
                        ) -> ApiResult[str, dict[TopicPartition, OffsetAndMetadata]]:
        assert isinstance(response, OffsetFetchResponse)
        (group_id,) = keys
        code = response.groups[0].error_code if response.groups else response.error_code
        if code:
            error = broker_error(code, None, f"fetching the offsets of group {group_id!r}")
            result: ApiResult[str, dict[TopicPartition, OffsetAndMetadata]] = ApiResult()
            result.coordinator_error(group_id, code, error)
            return result
        rows: list[tuple[str, Any]] = (
            [(t.name, p) for g in response.groups for t in g.topics for p in t.partitions]
            if response.groups
            else [(t.name, p) for t in response.topics for p in t.partitions]
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
        return ApiResult(completed={group_id: out})

    @staticmethod
    def call(ctx: AdminContext, group_id: str, partitions: Iterable[tuple[str, int]] | None = None,
             timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """The committed offsets of ``group_id`` (all, or those of ``partitions``); uncommitted ones left out."""
        wanted = None if partitions is None else sorted({(tp[0], tp[1]) for tp in partitions})
        handler = ListConsumerGroupOffsetsHandler(wanted)
        return ctx.run_call(lambda _timer: handler, [group_id], timeout)[group_id]
