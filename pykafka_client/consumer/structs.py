"""Value types of the consumer API only (Java: ConsumerGroupMetadata). ``TopicPartition``,
``OffsetAndMetadata`` and ``OffsetAndTimestamp`` are shared by every client: :mod:`pykafka_client.structs`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What a transactional producer needs to commit offsets for a consumer group (KIP-447)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
