"""A classic group's state (Kafka: ``kafka.coordinator.group.GroupMetadata``).

The states and their transition table are in :mod:`mini_broker.group.group_state`; :meth:`transition_to`
is the only way the state changes. A new group starts Empty. Invariants (all under
:attr:`GroupMetadata.lock`, an RLock the coordinator's driver takes around every call into the core):

* ``num_members_awaiting_join`` counts the members whose JoinGroup is parked.
* ``pending_members`` are KIP-394 member ids handed out with MEMBER_ID_REQUIRED that have not joined yet;
  a join round completes only when every member rejoined and no member is pending.
* ``pending_sync_members`` are the members of the current generation that have not sent SyncGroup yet.
* ``static_members`` maps ``group.instance.id`` -> current member id (KIP-345).
* ``supported_protocols`` counts, per protocol name, the members supporting it; the candidates for the
  next generation are the protocols every member supports.
* ``pending_join`` is the join round's armed timeout (None outside PreparingRebalance, or once the round
  completed); a timeout that fires with another ``timer_id`` is stale and ignored.
* ``offsets`` holds the committed offsets of the group (also for groups that never had members).
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mini_broker.group.group_requests import CommittedOffset, JoinCallback, JoinGroupMember, SyncCallback
from mini_broker.group.group_state import GroupState, can_rebalance, transition
from mini_broker.group.member_metadata import MemberMetadata, MemberSummary
from pykafka_client.errors import IllegalStateError
from pykafka_client.protocol.types import Reader

CONSUMER_PROTOCOL_TYPE = "consumer"
NO_PROTOCOL = ""
UNKNOWN_MEMBER_ID = ""


@dataclass(frozen=True, slots=True)
class PendingJoin:
    """The armed timeout of a join round. ``initial``: Kafka's InitialDelayedJoin (the first round of an
    Empty group, never completed early; ``remaining_ms`` of the rebalance timeout are left for re-arming);
    otherwise a DelayedJoin, completed early once every member rejoined."""

    timer_id: int
    initial: bool
    remaining_ms: int = 0


@dataclass(frozen=True, slots=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


def parse_consumer_subscription(metadata: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocolSubscription (any version: they all start with int16 version, then an
    array of strings); None when the bytes do not parse."""
    try:
        r = Reader(metadata)
        r.read_int16()
        n = r.read_array_length(2)
        return {r.read_string() for _ in range(n)}
    except Exception:
        return None


class GroupMetadata:
    """One group: its state machine, members and committed offsets. Mutate only under :attr:`lock`."""

    def __init__(self, group_id: str, initial_state: GroupState, now_ms: int) -> None:
        self.group_id = group_id
        self.lock = threading.RLock()
        self.state = initial_state
        self.current_state_timestamp = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.static_members: dict[str, str] = {}
        self.num_members_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None
        self.pending_join: PendingJoin | None = None
        self._timer_ids = 0
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        #: Offsets committed in a transaction (TxnOffsetCommit), by producer id, until its marker
        #: materializes (COMMIT) or drops (ABORT) them (Kafka ``pendingTransactionalOffsetCommits``).
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = {}
        #: Pending transactional offsets a plain commit of the same partition came after: the COMMIT marker
        #: does not materialize them (the newer plain commit wins, Kafka ``olderThan``).
        self.superseded_txn_offsets: dict[int, set[tuple[str, int]]] = {}
        #: Plain commits appended to a cluster's ``__consumer_offsets`` partition but not yet on its ISR: per
        #: partition the (sequence, offset) of the latest (Kafka ``pendingOffsetCommits``). Invisible to
        #: OffsetFetch (UNSTABLE_OFFSET_COMMIT with ``require_stable``) until the ISR has them.
        self.pending_offset_commits: dict[tuple[str, int], tuple[int, CommittedOffset]] = {}
        #: the sequence of the last plain commit staged pending
        self.offset_commit_seq = 0
        #: partition -> sequence of the staged commit its offset comes from (so that completions arriving out of
        #: order never bring back an older offset; Kafka compares the commits' append offsets)
        self.offset_commit_seqs: dict[tuple[str, int], int] = {}

    # -- state ----------------------------------------------------------------------------------------
    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return can_rebalance(self.state)

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        """Move to ``target``; IllegalStateError unless the current state is a valid previous state of it."""
        self.state = transition(self.group_id, self.state, target)
        self.current_state_timestamp = now_ms

    def arm_join(self, initial: bool, remaining_ms: int = 0) -> PendingJoin:
        """A new join-round timeout (replacing any armed one)."""
        self._timer_ids += 1
        self.pending_join = PendingJoin(self._timer_ids, initial, remaining_ms)
        return self.pending_join

    # -- members --------------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def size(self) -> int:
        return len(self.members)

    def is_empty(self) -> bool:
        return not self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def add_pending_member(self, member_id: str) -> None:
        self.pending_members.add(member_id)

    def remove_pending_member(self, member_id: str) -> None:
        self.pending_members.discard(member_id)

    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        """Add a member (its JoinGroup parked on ``callback``). The first member fixes the protocol type;
        the first member of a leaderless group becomes leader."""
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise IllegalStateError(f"member protocol type {member.protocol_type} differs from {self.protocol_type}")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocols())
        member.awaiting_join_callback = callback
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        """Remove a member (and its pending / pending-sync marks); a new leader is picked if it led."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocols())
            self.supported_protocols += Counter()  # drop zero counts
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: MemberMetadata, protocols: Sequence[tuple[str, bytes]],
                      callback: JoinCallback | None) -> None:
        """New protocols for ``member``; ``callback`` parks (or with None un-parks) its JoinGroup."""
        self.supported_protocols.subtract(member.protocols())
        self.supported_protocols += Counter()
        member.supported_protocols = list(protocols)
        self.supported_protocols.update(member.protocols())
        if callback is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """Give a static member a new member id (KIP-345); its parked requests must have been answered."""
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise IllegalStateError(f"cannot replace non-existing member {old_member_id} of {group_instance_id}")
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id
        return member

    def take_join_reply(self, member: MemberMetadata) -> JoinCallback | None:
        """Un-park ``member``'s JoinGroup: its reply handle (None when not parked)."""
        reply = member.awaiting_join_callback
        if reply is not None:
            member.awaiting_join_callback = None
            self.num_members_awaiting_join -= 1
        return reply

    def take_sync_reply(self, member: MemberMetadata) -> SyncCallback | None:
        """Un-park ``member``'s SyncGroup: its reply handle (None when not parked)."""
        reply = member.awaiting_sync_callback
        member.awaiting_sync_callback = None
        return reply

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader has not rejoined, make a member that has the leader. False when the group has a
        leader but no member rejoined (or no leader at all)."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    # -- pending sync ---------------------------------------------------------------------------------
    def add_pending_sync_member(self, member_id: str) -> None:
        if member_id not in self.members:
            raise IllegalStateError(f"member {member_id} is not in group {self.group_id}")
        self.pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        self.pending_sync_members.discard(member_id)

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def clear_pending_sync_members(self) -> None:
        self.pending_sync_members.clear()

    # -- protocols ------------------------------------------------------------------------------------
    def supports_protocols(self, member_protocol_type: str, member_protocols: set[str]) -> bool:
        """Whether a member with these protocols may join: an Empty group takes any non-empty type and
        protocol set; otherwise the type must match and one protocol must be supported by every member."""
        if self.is_state(GroupState.EMPTY):
            return bool(member_protocol_type) and bool(member_protocols)
        n = len(self.members)
        return (self.protocol_type == member_protocol_type
                and any(self.supported_protocols[p] == n for p in member_protocols))

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """The protocol all members support with the most votes (each member votes for its preferred
        candidate; ties go to the protocol voted for first)."""
        if not self.members:
            raise IllegalStateError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda p: votes[p])

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_consumer_subscription(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Unknown subscriptions (unparsable metadata) count as subscribed."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> None:
        """Bump the generation; with members pick the protocol and go CompletingRebalance, else Empty."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.clear_pending_sync_members()

    def current_member_metadata(self) -> list[JoinGroupMember]:
        """The member list the leader gets: every member's metadata for the selected protocol."""
        if self.protocol_name is None:
            raise IllegalStateError(f"no protocol selected for group {self.group_id}")
        protocol = self.protocol_name
        return [JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(protocol)) for m in self.members.values()]

    def summary(self) -> GroupSummary:
        if self.is_state(GroupState.STABLE):
            protocol = self.protocol_name or NO_PROTOCOL
            return GroupSummary(self.state.value, self.protocol_type or "", protocol,
                                [m.summary(protocol) for m in self.members.values()])
        return GroupSummary(self.state.value, self.protocol_type or "", NO_PROTOCOL,
                            [m.summary(None) for m in self.members.values()])

    # -- offsets --------------------------------------------------------------------------------------
    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_txn_offsets) or bool(self.pending_offset_commits)

    def has_pending_txn_offsets(self, tp: tuple[str, int]) -> bool:
        return any(tp in offsets for offsets in self.pending_txn_offsets.values())

    def has_pending_offset_commits(self, tp: tuple[str, int]) -> bool:
        """A commit of ``tp`` is not settled yet: a plain one not on the ISR, or a transactional one before its
        marker (Kafka ``hasPendingOffsetCommitsForTopicPartition``)."""
        return tp in self.pending_offset_commits or self.has_pending_txn_offsets(tp)

    def remove_offsets(self, partitions: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """Drop the offsets of ``partitions`` (and their pending plain commits, which will then not apply);
        the partitions that had an offset."""
        for tp in partitions:
            self.pending_offset_commits.pop(tp, None)
        return [tp for tp in partitions if self.offsets.pop(tp, None) is not None]

    def remove_all_offsets(self) -> list[tuple[str, int]]:
        return self.remove_offsets(list(self.offsets))

    def remove_expired_offsets(self, now_ms: int, retention_ms: int, subscribed: Callable[[str], bool],
                               consumer_group_topics: frozenset[str] | None = None) -> list[tuple[str, int]]:
        """Offsets past their expiry: an explicit ``expire_timestamp``, else ``retention_ms`` after the later of
        the commit and the moment the group became Empty; only for Empty groups or topics the (consumer)
        group is not subscribed to. ``consumer_group_topics``: this (Empty) group keeps the offsets of a KIP-848
        consumer group subscribed to these topics; as Kafka's consumer groups, the offsets of those topics do not
        expire and the others expire ``retention_ms`` after their commit."""
        removed: list[tuple[str, int]] = []
        for tp, om in list(self.offsets.items()):
            if consumer_group_topics is not None:
                if tp[0] in consumer_group_topics:
                    continue
                base = om.commit_timestamp
            elif self.is_state(GroupState.EMPTY):
                base = max(om.commit_timestamp, self.current_state_timestamp)
            elif self.protocol_type == CONSUMER_PROTOCOL_TYPE and not subscribed(tp[0]):
                base = om.commit_timestamp
            else:
                continue
            deadline = om.expire_timestamp if om.expire_timestamp >= 0 else base + retention_ms
            if now_ms >= deadline:
                del self.offsets[tp]
                removed.append(tp)
        return removed

    def __repr__(self) -> str:
        return (f"GroupMetadata(group_id={self.group_id!r}, generation={self.generation_id}, "
                f"state={self.state.value}, protocol_type={self.protocol_type!r}, protocol={self.protocol_name!r}, "
                f"leader={self.leader_id!r}, members={list(self.members)})")
