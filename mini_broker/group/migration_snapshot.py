"""What a group carries across KIP-848's online migration between the classic coordinator and the consumer groups
(plain data, importable from both sides without cycles)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassicMemberSnapshot:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    #: (protocol name, ConsumerProtocolSubscription bytes), in the member's preference order
    protocols: tuple[tuple[str, bytes], ...]
    #: its ConsumerProtocolAssignment (b"": none)
    assignment: bytes


@dataclass(frozen=True)
class ClassicGroupSnapshot:
    group_id: str
    generation_id: int
    protocol_name: str | None
    members: tuple[ClassicMemberSnapshot, ...]
    #: on an upgrade, the classic group's own records (its Empty group record), not yet written: the consumer
    #: group appends them in one batch with its records, so that the conversion is one atomic write, as Kafka's
    records: tuple[tuple[bytes, bytes | None], ...] = ()
