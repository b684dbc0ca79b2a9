"""One member of a classic group (Kafka: ``kafka.coordinator.group.MemberMetadata``).

A member is *awaiting join* while its JoinGroup is parked (``awaiting_join_callback`` set) and *awaiting
sync* while its SyncGroup is parked. ``is_new`` is true from its first accepted JoinGroup until the join
round that included it completes: new members are held to the 5-minute new-member join timeout instead of
their session timeout. The callbacks are opaque reply handles: the coordinator's core names them in response
effects, its driver calls them. All fields are read and written under the owning group's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mini_broker.group.group_requests import JoinCallback, SyncCallback


@dataclass(frozen=True, slots=True)
class MemberSummary:
    """What DescribeGroups shows of a member (metadata/assignment empty unless the group is Stable)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class MemberMetadata:
    """A group member: identity, timeouts, the protocols it supports (in preference order), its assignment."""

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        supported_protocols: Sequence[tuple[str, bytes]],
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols: list[tuple[str, bytes]] = list(supported_protocols)
        self.assignment = b""
        self.awaiting_join_callback: JoinCallback | None = None
        self.awaiting_sync_callback: SyncCallback | None = None
        self.is_new = False

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    def protocols(self) -> set[str]:
        """The names of the protocols this member supports."""
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        """This member's metadata for ``protocol``; ValueError if it does not support it."""
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """True when ``protocols`` equals what the member sent before (same names, order and metadata)."""
        return list(protocols) == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} does not support any of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether the member's session needs no deadline now: a member (not new) waiting in a join or sync
        round is covered by that round. New members can be expired while they wait to join."""
        return not self.is_new and (self.is_awaiting_join or self.is_awaiting_sync)

    def summary(self, protocol: str | None) -> MemberSummary:
        """DescribeGroups view; ``protocol`` None leaves metadata and assignment out (group not Stable)."""
        if protocol is None:
            return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host, b"", b"")
        return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                             self.metadata(protocol), self.assignment)

    def __repr__(self) -> str:
        return (f"MemberMetadata(member_id={self.member_id!r}, group_instance_id={self.group_instance_id!r}, "
                f"client_id={self.client_id!r}, protocols={[n for n, _ in self.supported_protocols]})")
