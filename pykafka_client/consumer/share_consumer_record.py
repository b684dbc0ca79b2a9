"""The record a share consumer delivers (Java: ConsumerRecord with its ``deliveryCount``, KIP-932)."""

from __future__ import annotations

from typing import TypeVar

from pykafka_client.consumer.consumer_record import ConsumerRecord

K = TypeVar("K")
V = TypeVar("V")


class ShareConsumerRecord(ConsumerRecord[K, V]):
    """A ConsumerRecord plus ``delivery_count``: how many times the share group has delivered it (1 the first
    time; a released record or one whose acquisition lock expired comes back with the count raised)."""

    __slots__ = ("delivery_count",)

    delivery_count: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareConsumerRecord):
            return NotImplemented
        return ConsumerRecord.__eq__(self, other) and self.delivery_count == other.delivery_count

    def __hash__(self) -> int:
        return ConsumerRecord.__hash__(self)

    def __repr__(self) -> str:
        return f"Share{ConsumerRecord.__repr__(self)[:-1]}, delivery_count={self.delivery_count})"
