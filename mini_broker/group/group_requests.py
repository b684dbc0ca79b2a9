"""What goes into the group coordinator and what it answers: typed requests and results.

The requests are the coordinator's view of the wire requests (the API handlers build them: version rules
such as KIP-394's ``require_known_member_id`` are already applied). JoinGroup and SyncGroup may be answered
later, so they come with a reply callback (:data:`JoinCallback` / :data:`SyncCallback`): the sans-IO core
never calls it, it only names it in a ``SendJoinResponse`` / ``SendSyncResponse`` effect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

NONE: Final = 0
NO_GENERATION: Final = -1
NO_LEADER: Final = ""


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A committed offset as the coordinator stores it (Kafka's coordinator calls this value
    ``OffsetAndMetadata``; it is persisted as an ``OffsetCommitValue`` record). Not the clients'
    :class:`pykafka_client.structs.OffsetAndMetadata` (offset, metadata, leader epoch): this one also carries
    the commit and expire timestamps that drive offset retention. ``leader_epoch`` -1 when unknown;
    ``expire_timestamp`` -1 when the commit did not carry a retention time (v2-v4 only)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


# -- requests ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class JoinGroupParams:
    """A JoinGroup. ``require_known_member_id``: v4+ without an instance id (KIP-394);
    ``support_skipping_assignment``: v9+ (a rejoining static leader may skip the assignment)."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    require_known_member_id: bool = False
    support_skipping_assignment: bool = False
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SyncGroupParams:
    """A SyncGroup; ``assignments`` (member id -> bytes) only matter from the leader."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HeartbeatParams:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMember:
    """One member of a LeaveGroup request (v0-2 send one with the top-level member id)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupParams:
    group_id: str
    members: Sequence[LeaveMember]


@dataclass(frozen=True, slots=True)
class OffsetCommitParams:
    """An OffsetCommit. Generation -1 with no member id is a manual (admin) commit."""

    group_id: str
    offsets: Mapping[tuple[str, int], CommittedOffset]
    member_id: str = ""
    generation_id: int = NO_GENERATION
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitParams:
    """A TxnOffsetCommit: offsets committed in ``producer_id``'s transaction. ``member_id`` /
    ``generation_id`` / ``group_instance_id`` are the KIP-447 fields (v3+; older requests leave the defaults,
    which skip the member checks)."""

    group_id: str
    producer_id: int
    producer_epoch: int
    offsets: Mapping[tuple[str, int], CommittedOffset]
    member_id: str = ""
    generation_id: int = NO_GENERATION
    group_instance_id: str | None = None


# -- results ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    """What a JoinGroup is answered with (the API layer turns it into a JoinGroupResponse)."""

    member_id: str
    error_code: int
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = NO_LEADER
    members: list[JoinGroupMember] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    error_code: int = NONE


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]
