"""The internal topics of the coordinators, one entry each (Kafka: the broker configs of ``__consumer_offsets``
and ``__transaction_state``): the FindCoordinator key type whose coordinator a partition's leader is, and the
broker configs the topic is created with (partition count, replication factor, segment size, min ISR).

Everything that treats the internal topics alike reads this table: FindCoordinator's creation of a topic on a
cluster, the coordinator lookup, the cluster's per-partition coordinator loading, a single broker's local
partitions. A further coordinator topic is one more entry.

An existing topic keeps its partition count whatever the config says now (as Kafka): the config only sizes a
topic being created.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

GROUP_KEY_TYPE: Final = 0
TRANSACTION_KEY_TYPE: Final = 1
#: a share partition's state (KIP-932): key ``group:topicId:partition``
SHARE_KEY_TYPE: Final = 2


@dataclass(frozen=True)
class InternalTopic:
    name: str
    #: the FindCoordinator key type this topic's partition leaders coordinate
    key_type: int
    num_partitions_config: str
    replication_factor_config: str
    segment_bytes_config: str
    #: the topic's ``min.insync.replicas`` (None: the broker default)
    min_isr_config: str | None = None

    def settings(self, get_int: Callable[[str], int]) -> tuple[int, int, dict[str, str]]:
        """(partition count, replication factor, topic configs) this topic is created with, from the broker's
        configs."""
        configs = {"cleanup.policy": "compact", "segment.bytes": str(get_int(self.segment_bytes_config))}
        if self.min_isr_config is not None:
            configs["min.insync.replicas"] = str(get_int(self.min_isr_config))
        return get_int(self.num_partitions_config), get_int(self.replication_factor_config), configs


INTERNAL_TOPICS: Final = (
    InternalTopic("__consumer_offsets", GROUP_KEY_TYPE, "offsets.topic.num.partitions",
                  "offsets.topic.replication.factor", "offsets.topic.segment.bytes"),
    InternalTopic("__transaction_state", TRANSACTION_KEY_TYPE, "transaction.state.log.num.partitions",
                  "transaction.state.log.replication.factor", "transaction.state.log.segment.bytes",
                  "transaction.state.log.min.isr"),
    InternalTopic("__share_group_state", SHARE_KEY_TYPE, "share.coordinator.state.topic.num.partitions",
                  "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.segment.bytes",
                  "share.coordinator.state.topic.min.isr"),
)
INTERNAL_TOPIC_NAMES: Final = frozenset(t.name for t in INTERNAL_TOPICS)
INTERNAL_TOPIC_OF_KEY_TYPE: Final = {t.key_type: t for t in INTERNAL_TOPICS}
