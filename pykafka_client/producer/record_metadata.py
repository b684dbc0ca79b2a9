"""What a successful send returns (Java ``RecordMetadata``)."""

from __future__ import annotations

from typing import NamedTuple

from pykafka_client.structs import TopicPartition

#: Returned for ``offset`` when the broker did not assign one (acks=0, or a duplicate whose original
#: offset is no longer known).
UNKNOWN_OFFSET = -1
#: Returned for ``timestamp`` when there is none.
NO_TIMESTAMP = -1


class RecordMetadata(NamedTuple):
    """Where a record was written.

    ``offset`` is -1 with acks=0. ``timestamp`` is the broker's log-append time when the topic uses
    ``LogAppendTime``, else the record's create time. The sizes are of the serialized key/value, -1 for None.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def has_offset(self) -> bool:
        return self.offset != UNKNOWN_OFFSET

    def has_timestamp(self) -> bool:
        return self.timestamp != NO_TIMESTAMP
