"""ListOffsets (Java ``KafkaAdminClient.listOffsets``): to each partition's leader, one request per leader."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import asked_partitions, broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import PartitionLeaders
from pykafka_client.admin.types import IsolationLevel, ListOffsetsResultInfo, OffsetSpec
from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from pykafka_client.structs import Node, PartitionMapping, TopicPartition
from pykafka_client.utils.arguments import mapping_argument
from pykafka_client.utils.time import Timer

#: the first versions of ListOffsets with: an isolation level, the current leader epoch, the max-timestamp
#: spec, a timeout
ISOLATION_LEVEL_VERSION, LEADER_EPOCH_VERSION, MAX_TIMESTAMP_VERSION, TIMEOUT_VERSION = 2, 4, 7, 10


@dataclass
class ListOffsetsHandler:
    """Keys: the partitions; ``specs`` which offset of each; a partition whose leader moved is looked up again."""

    specs: Mapping[TopicPartition, OffsetSpec]
    isolation_level: IsolationLevel
    metadata: Metadata
    timer: Timer
    api_key = ApiKey.LIST_OFFSETS
    lookup = PartitionLeaders("leader for list_offsets")

    def build_request(self, version: int, keys: list[TopicPartition]) -> ListOffsetsRequest:
        if version < MAX_TIMESTAMP_VERSION and any(self.specs[tp].timestamp == OffsetSpec.MAX_TIMESTAMP for tp in keys):
            raise UnsupportedVersionError(f"OffsetSpec.max_timestamp() needs ListOffsets v{MAX_TIMESTAMP_VERSION} "
                                          f"or later; the broker supports up to v{version}")
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in keys:
            by_topic.setdefault(tp[0], []).append(tp)
        return ListOffsetsRequest(
            replica_id=-1,
            isolation_level=int(self.isolation_level) if version >= ISOLATION_LEVEL_VERSION else 0,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=tp[1],
                            timestamp=self.specs[tp].timestamp,
                            current_leader_epoch=(
                                _or_unknown(self.metadata.last_seen_leader_epoch(tp))
                                if version >= LEADER_EPOCH_VERSION else -1
                            ),
                            max_num_offsets=1,
                        )
                        for tp in parts
                    ],
                )
                for topic, parts in by_topic.items()
            ],
            timeout_ms=max(0, min(self.timer.remaining_ms(), 2**31 - 1)) if version >= TIMEOUT_VERSION else 60_000,
        )

    def handle_response(self, node: Node, keys: list[TopicPartition], response: ListOffsetsResponse
                        ) -> ApiResult[TopicPartition, ListOffsetsResultInfo]:
        assert isinstance(response, ListOffsetsResponse)
        result: ApiResult[TopicPartition, ListOffsetsResultInfo] = ApiResult()
        for tp, p in asked_partitions(response.topics, keys):
            if p.error_code:
                result.partition_error(tp, p.error_code, broker_error(p.error_code, None, f"partition {tp[0]}-{tp[1]}"))
                continue
            offset = p.offset
            if not offset and p.old_style_offsets:
                offset = p.old_style_offsets[0]
            result.completed[tp] = ListOffsetsResultInfo(offset, p.timestamp,
                                                         p.leader_epoch if p.leader_epoch >= 0 else None)
        result.look_up_unanswered(keys)
        return result

    @staticmethod
    def call(ctx: AdminContext, specs: PartitionMapping[OffsetSpec], timeout: float | None = None,
             isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
             ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """Each partition's offset of its spec; raises the first partition's error after all were asked."""
        mapping_argument(
            "list_offsets", "specs", specs,
            "a mapping of TopicPartition to OffsetSpec, e.g. {TopicPartition('orders', 0): OffsetSpec.latest()}",
        )
        wanted = {TopicPartition(tp[0], tp[1]): spec for tp, spec in specs.items()}
        if not wanted:
            return {}
        return ctx.run_call(lambda timer: ListOffsetsHandler(wanted, isolation_level, ctx.metadata, timer),
                            list(wanted), timeout)


def _or_unknown(epoch: int | None) -> int:
    """The leader epoch to send: -1 when none was seen (0 is a leader's first epoch, not unknown)."""
    return -1 if epoch is None else epoch
