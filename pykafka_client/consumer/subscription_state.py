"""What the consumer is subscribed to, what is assigned, and each assigned partition's fetch state
(Java: SubscriptionState, TopicPartitionState, FetchState, FetchPosition).

Subscription types are exclusive: topics (AUTO_TOPICS), a pattern (AUTO_PATTERN) or a manual
assignment (USER_ASSIGNED); switching between them without ``unsubscribe()`` raises
IllegalStateError and leaves the state unchanged.

Per assigned partition the fetch state machine is::

    INITIALIZING --seek--> FETCHING
    INITIALIZING --committed offset / reset with a leader epoch--> AWAIT_VALIDATION
    INITIALIZING --request_offset_reset--> AWAIT_RESET --reset (ListOffsets)--> FETCHING | AWAIT_VALIDATION
    FETCHING --offset out of range--> AWAIT_RESET
    FETCHING --leader (or its epoch) changed and the position has an epoch--> AWAIT_VALIDATION
    AWAIT_VALIDATION --OffsetsForLeaderEpoch: end offset >= position--> FETCHING
    AWAIT_VALIDATION --end offset < position (log truncated)--> FETCHING at the divergent offset
                                                                (LogTruncationError with reset "none")

Log-truncation detection (KIP-320): every position remembers the leader (id and epoch) it was last
validated against and the epoch of the record before it (``offset_epoch``). When metadata names another
leader or epoch, a position with an ``offset_epoch`` goes to AWAIT_VALIDATION and is checked with
OffsetsForLeaderEpoch (``position_validator.py``); without one (a plain ``seek``, or brokers without leader
epochs) it just takes the new leader. A partition is *fetchable* when it has a valid position (FETCHING)
and is neither paused nor pending revocation.

This object is owned by the application thread; the heartbeat thread never touches it (all
assignment changes happen in ``poll()``), which is why it needs no lock of its own. It is guarded by
the consumer's single-thread check (``KafkaConsumer._acquire``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from enum import Enum

from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener, NoOpConsumerRebalanceListener
from pykafka_client.errors import IllegalArgumentError, IllegalStateError, NoOffsetForPartitionError
from pykafka_client.network.cluster import LeaderAndEpoch
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

SUBSCRIPTION_EXCEPTION_MESSAGE = "Subscription to topics, partitions and pattern are mutually exclusive"


class SubscriptionType(Enum):
    NONE = "NONE"
    AUTO_TOPICS = "AUTO_TOPICS"
    AUTO_PATTERN = "AUTO_PATTERN"
    USER_ASSIGNED = "USER_ASSIGNED"


class OffsetResetStrategy(Enum):
    """``auto.offset.reset``: where to start when there is no valid position."""

    LATEST = "latest"
    EARLIEST = "earliest"
    NONE = "none"

    @property
    def timestamp(self) -> int:
        """The ListOffsets timestamp to send (-2 earliest, -1 latest)."""
        if self is OffsetResetStrategy.EARLIEST:
            return -2
        if self is OffsetResetStrategy.LATEST:
            return -1
        raise IllegalArgumentError("reset strategy NONE has no ListOffsets timestamp")


class FetchState(Enum):
    INITIALIZING = "INITIALIZING"
    FETCHING = "FETCHING"
    AWAIT_RESET = "AWAIT_RESET"
    AWAIT_VALIDATION = "AWAIT_VALIDATION"

    @property
    def has_position(self) -> bool:
        return self is FetchState.FETCHING or self is FetchState.AWAIT_VALIDATION

    @property
    def has_valid_position(self) -> bool:
        return self is FetchState.FETCHING


_ANY_BUT_INITIALIZING = frozenset({FetchState.FETCHING, FetchState.AWAIT_RESET, FetchState.AWAIT_VALIDATION})
_VALID_TRANSITIONS: dict[FetchState, frozenset[FetchState]] = {
    FetchState.INITIALIZING: _ANY_BUT_INITIALIZING,
    FetchState.FETCHING: _ANY_BUT_INITIALIZING,
    FetchState.AWAIT_RESET: _ANY_BUT_INITIALIZING,
    FetchState.AWAIT_VALIDATION: _ANY_BUT_INITIALIZING,
}


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """The offset to fetch next, the leader epoch of the record before it (if known) and the leader
    (node id and epoch) it was last seen on."""

    offset: int
    offset_epoch: int | None = None
    current_leader: int | None = None
    current_leader_epoch: int | None = None

    def with_leader(self, leader: LeaderAndEpoch) -> FetchPosition:
        return FetchPosition(self.offset, self.offset_epoch, leader.leader.id if leader.leader else None, leader.epoch)

    def has_leader(self, leader: LeaderAndEpoch) -> bool:
        leader_id = leader.leader.id if leader.leader else None
        return self.current_leader == leader_id and self.current_leader_epoch == leader.epoch


@dataclass(frozen=True, slots=True)
class LogTruncation:
    """A truncation found by validation with no reset policy: the position that was validated and the
    first offset (and its epoch) known to diverge, None when the new leader could not say."""

    partition: TopicPartition
    fetch_position: FetchPosition
    divergent_offset: OffsetAndMetadata | None


class TopicPartitionState:
    """Fetch bookkeeping of one assigned partition."""

    __slots__ = (
        "fetch_state",
        "position",
        "high_watermark",
        "log_start_offset",
        "last_stable_offset",
        "paused",
        "pending_revocation",
        "reset_strategy",
        "next_retry_time_ms",
    )

    def __init__(self) -> None:
        self.fetch_state = FetchState.INITIALIZING
        self.position: FetchPosition | None = None
        self.high_watermark: int | None = None
        self.log_start_offset: int | None = None
        self.last_stable_offset: int | None = None
        self.paused = False
        self.pending_revocation = False
        self.reset_strategy: OffsetResetStrategy | None = None
        self.next_retry_time_ms: int | None = None

    def _transition(self, new_state: FetchState, position: FetchPosition | None) -> None:
        if new_state not in _VALID_TRANSITIONS[self.fetch_state]:
            return
        self.fetch_state = new_state
        self.position = position
        if new_state is not FetchState.AWAIT_RESET:
            self.reset_strategy = None
            self.next_retry_time_ms = None

    def seek(self, position: FetchPosition) -> None:
        self._transition(FetchState.FETCHING, position)

    def validate_position(self, position: FetchPosition) -> None:
        """Java validatePosition: validation needs the epoch of the record before the position and the
        leader's epoch; without both the position is used as it is."""
        if position.offset_epoch is not None and position.current_leader_epoch is not None:
            self._transition(FetchState.AWAIT_VALIDATION, position)
        else:
            self._transition(FetchState.FETCHING, position)

    def maybe_validate_position(self, leader: LeaderAndEpoch) -> bool:
        """If the position was last validated against another leader or epoch, validate it again.
        True if the partition now awaits validation."""
        if self.fetch_state is FetchState.AWAIT_RESET or leader.leader is None:
            return False
        if self.position is not None and not self.position.has_leader(leader):
            self.validate_position(self.position.with_leader(leader))
        return self.fetch_state is FetchState.AWAIT_VALIDATION

    def awaiting_validation(self) -> bool:
        return self.fetch_state is FetchState.AWAIT_VALIDATION

    def reset(self, strategy: OffsetResetStrategy) -> None:
        self._transition(FetchState.AWAIT_RESET, None)
        self.reset_strategy = strategy
        self.next_retry_time_ms = None

    def is_fetchable(self) -> bool:
        return not self.paused and not self.pending_revocation and self.fetch_state.has_valid_position

    def awaiting_reset(self) -> bool:
        return self.fetch_state is FetchState.AWAIT_RESET

    def awaiting_retry_backoff(self, now_ms: int) -> bool:
        return self.next_retry_time_ms is not None and now_ms < self.next_retry_time_ms


class SubscriptionState:
    """Subscription and assignment of one consumer (see module docstring)."""

    def __init__(self, default_reset_strategy: OffsetResetStrategy = OffsetResetStrategy.LATEST) -> None:
        self.default_reset_strategy = default_reset_strategy
        self.subscription_type = SubscriptionType.NONE
        self._subscription: frozenset[str] = frozenset()
        self._group_subscription: frozenset[str] = frozenset()
        self.subscribed_pattern: re.Pattern[str] | None = None
        # insertion-ordered; movePartitionToEnd reorders it for fetch fairness
        self._assignment: dict[TopicPartition, TopicPartitionState] = {}
        self.rebalance_listener: ConsumerRebalanceListener = NoOpConsumerRebalanceListener()
        #: bumped on every assignment change, so that in-flight fetches for an old assignment are dropped
        self.assignment_id = 0

    # -- subscription -----------------------------------------------------------------------------

    def _set_subscription_type(self, type_: SubscriptionType) -> None:
        if self.subscription_type is SubscriptionType.NONE:
            self.subscription_type = type_
        elif self.subscription_type is not type_:
            raise IllegalStateError(SUBSCRIPTION_EXCEPTION_MESSAGE)

    def subscribe(self, topics: Collection[str], listener: ConsumerRebalanceListener | None = None) -> bool:
        """Subscribe to a set of topics; True if the subscription changed."""
        self._set_subscription_type(SubscriptionType.AUTO_TOPICS)
        self.rebalance_listener = listener or NoOpConsumerRebalanceListener()
        return self._change_subscription(topics)

    def subscribe_pattern(self, pattern: re.Pattern[str], listener: ConsumerRebalanceListener | None = None) -> None:
        self._set_subscription_type(SubscriptionType.AUTO_PATTERN)
        self.rebalance_listener = listener or NoOpConsumerRebalanceListener()
        self.subscribed_pattern = pattern

    def subscribe_from_pattern(self, topics: Collection[str]) -> bool:
        """Set the topics matched by the pattern (from metadata); True if they changed."""
        if self.subscription_type is not SubscriptionType.AUTO_PATTERN:
            raise IllegalArgumentError("attempt to subscribe from pattern while subscription type is not AUTO_PATTERN")
        return self._change_subscription(topics)

    def _change_subscription(self, topics: Collection[str]) -> bool:
        new = frozenset(topics)
        if new == self._subscription:
            return False
        self._subscription = new
        return True

    def group_subscribe(self, topics: Collection[str]) -> bool:
        """As leader, also track the topics of the other members (for metadata); True if it grew."""
        if not self.has_auto_assigned_partitions():
            raise IllegalStateError(SUBSCRIPTION_EXCEPTION_MESSAGE)
        new = self._group_subscription | frozenset(topics)
        changed = new != self._group_subscription
        self._group_subscription = new
        return changed

    def reset_group_subscription(self) -> None:
        self._group_subscription = frozenset()

    def subscription(self) -> frozenset[str]:
        if self.has_auto_assigned_partitions():
            return self._subscription
        return frozenset()

    def metadata_topics(self) -> frozenset[str]:
        """Topics whose metadata the consumer needs: its subscription plus the group's (leader)."""
        if self._group_subscription:
            return self._subscription | self._group_subscription
        return self._subscription

    def needs_metadata(self, topic: str) -> bool:
        return topic in self._subscription or topic in self._group_subscription

    def matches_subscribed_pattern(self, topic: str) -> bool:
        return self.subscribed_pattern is not None and self.subscribed_pattern.fullmatch(topic) is not None

    def has_pattern_subscription(self) -> bool:
        return self.subscription_type is SubscriptionType.AUTO_PATTERN

    def has_auto_assigned_partitions(self) -> bool:
        return self.subscription_type in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    def has_no_subscription_or_user_assignment(self) -> bool:
        return self.subscription_type is SubscriptionType.NONE

    def is_user_assigned(self) -> bool:
        return self.subscription_type is SubscriptionType.USER_ASSIGNED

    def unsubscribe(self) -> None:
        self._subscription = frozenset()
        self._group_subscription = frozenset()
        self._assignment.clear()
        self.subscribed_pattern = None
        self.subscription_type = SubscriptionType.NONE
        self.rebalance_listener = NoOpConsumerRebalanceListener()
        self.assignment_id += 1

    # -- assignment -------------------------------------------------------------------------------

    def assign_from_user(self, partitions: Collection[TopicPartition]) -> bool:
        """Manual assignment; positions of partitions kept are kept. True if the assignment changed."""
        self._set_subscription_type(SubscriptionType.USER_ASSIGNED)
        return self._set_assignment(partitions)

    def assign_from_subscribed(self, partitions: Collection[TopicPartition]) -> None:
        """Assignment from the group. Every partition must match the subscription."""
        if not self.has_auto_assigned_partitions():
            raise IllegalArgumentError("attempt to dynamically assign partitions while manual assignment in use")
        for tp in partitions:
            if not self._matches_subscription(tp.topic):
                raise IllegalArgumentError(f"assigned partition {tp} for non-subscribed topic")
        self._set_assignment(partitions)

    def _matches_subscription(self, topic: str) -> bool:
        if self.subscription_type is SubscriptionType.AUTO_PATTERN:
            return topic in self._subscription or self.matches_subscribed_pattern(topic)
        return topic in self._subscription

    def check_assignment_matched_subscription(self, partitions: Iterable[TopicPartition]) -> bool:
        return all(self._matches_subscription(tp.topic) for tp in partitions)

    def _set_assignment(self, partitions: Collection[TopicPartition]) -> bool:
        new_set = list(dict.fromkeys(partitions))
        if set(new_set) == set(self._assignment):
            return False
        old = self._assignment
        self._assignment = {tp: old.get(tp) or TopicPartitionState() for tp in new_set}
        self.assignment_id += 1
        return True

    def assigned_partitions(self) -> set[TopicPartition]:
        return set(self._assignment)

    def assigned_partitions_list(self) -> list[TopicPartition]:
        return list(self._assignment)

    def num_assigned_partitions(self) -> int:
        return len(self._assignment)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._assignment

    def _assigned_state(self, tp: TopicPartition) -> TopicPartitionState:
        state = self._assignment.get(tp)
        if state is None:
            raise IllegalStateError(f"No current assignment for partition {tp}")
        return state

    def move_partition_to_end(self, tp: TopicPartition) -> None:
        state = self._assignment.pop(tp, None)
        if state is not None:
            self._assignment[tp] = state

    def mark_pending_revocation(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            state = self._assignment.get(tp)
            if state is not None:
                state.pending_revocation = True

    # -- positions --------------------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seek_position(tp, FetchPosition(offset))

    def seek_position(self, tp: TopicPartition, position: FetchPosition) -> None:
        if position.offset < 0:
            raise IllegalArgumentError(f"seek offset must not be a negative number: {position.offset}")
        self._assigned_state(tp).seek(position)

    def maybe_seek_unvalidated(
        self, tp: TopicPartition, position: FetchPosition, strategy: OffsetResetStrategy
    ) -> bool:
        """Complete a reset (ListOffsets result) unless the partition was reassigned or re-seeked
        meanwhile (then the result is stale and dropped). True if applied."""
        state = self._assignment.get(tp)
        if state is None or not state.awaiting_reset() or state.reset_strategy is not strategy:
            return False
        state.validate_position(position)
        return True

    def seek_unvalidated(self, tp: TopicPartition, position: FetchPosition) -> None:
        """Seek to a position whose log may have diverged since it was recorded (a committed offset with
        its leader epoch): it is validated first when it has an epoch and the leader's epoch is known."""
        if position.offset < 0:
            raise IllegalArgumentError(f"seek offset must not be a negative number: {position.offset}")
        self._assigned_state(tp).validate_position(position)

    # -- validation after a leader change (KIP-320) ----------------------------------------------

    def maybe_validate_position_for_current_leader(self, tp: TopicPartition, leader: LeaderAndEpoch) -> bool:
        """Compare the position's leader with the current one; a change with known epochs starts a
        validation. True if ``tp`` awaits validation (not fetchable until it completes)."""
        state = self._assignment.get(tp)
        return state is not None and state.maybe_validate_position(leader)

    def awaiting_validation(self, tp: TopicPartition) -> bool:
        state = self._assignment.get(tp)
        return state is not None and state.awaiting_validation()

    def partitions_needing_validation(self, now_ms: int) -> dict[TopicPartition, FetchPosition]:
        """Positions awaiting validation and not waiting for a retry (or an answer already asked for)."""
        return {
            tp: s.position
            for tp, s in self._assignment.items()
            if s.awaiting_validation() and s.position is not None and not s.awaiting_retry_backoff(now_ms)
        }

    def complete_validation_without_check(self, tp: TopicPartition) -> None:
        """The leader cannot validate (OffsetsForLeaderEpoch too old): use the position as it is."""
        state = self._assignment.get(tp)
        if state is not None and state.awaiting_validation() and state.position is not None:
            state.seek(state.position)

    def maybe_complete_validation(
        self, tp: TopicPartition, requested: FetchPosition, end_epoch: int, end_offset: int
    ) -> LogTruncation | None:
        """Apply an OffsetsForLeaderEpoch answer for the position ``requested`` (Java
        maybeCompleteValidation). An answer for a position that has moved since is dropped. An end offset
        below the position means the new leader's log diverged (truncation): with a reset policy the
        position moves back to the end offset, the first offset known to diverge, so nothing the new
        leader has is skipped; with ``none`` the truncation is returned for a LogTruncationError. An
        undefined end offset (the leader has no such epoch) resets the position per the reset policy."""
        state = self._assignment.get(tp)
        if state is None or not state.awaiting_validation() or state.position != requested:
            log.debug("dropping the validation result for %s: its position changed meanwhile", tp)
            return None
        if end_offset < 0 or end_epoch < 0:
            if self.default_reset_strategy is OffsetResetStrategy.NONE:
                return LogTruncation(tp, requested, None)
            log.info(
                "the leader of %s has no end offset for epoch %s (position %d); resetting the offset (%s)",
                tp, requested.offset_epoch, requested.offset, self.default_reset_strategy.value,
            )
            state.reset(self.default_reset_strategy)
            return None
        if end_offset < requested.offset:
            if self.default_reset_strategy is OffsetResetStrategy.NONE:
                log.warning(
                    "truncation detected for %s at offset %d (epoch %s): the leader's log diverges from offset %d "
                    "(epoch %d) and auto.offset.reset is none",
                    tp, requested.offset, requested.offset_epoch, end_offset, end_epoch,
                )
                return LogTruncation(tp, requested, OffsetAndMetadata(end_offset, "", end_epoch))
            log.info(
                "truncation detected for %s at offset %d (epoch %s); resetting the offset to %d (epoch %d), "
                "the first offset known to diverge",
                tp, requested.offset, requested.offset_epoch, end_offset, end_epoch,
            )
            state.seek(FetchPosition(end_offset, end_epoch, requested.current_leader, requested.current_leader_epoch))
            return None
        state.seek(requested)
        return None

    def position(self, tp: TopicPartition) -> FetchPosition | None:
        return self._assigned_state(tp).position

    def position_or_none(self, tp: TopicPartition) -> FetchPosition | None:
        state = self._assignment.get(tp)
        return None if state is None else state.position

    def has_valid_position(self, tp: TopicPartition) -> bool:
        state = self._assignment.get(tp)
        return state is not None and state.fetch_state.has_valid_position

    def has_all_fetch_positions(self) -> bool:
        return all(s.fetch_state.has_valid_position for s in self._assignment.values())

    def initializing_partitions(self) -> set[TopicPartition]:
        return {tp for tp, s in self._assignment.items() if s.fetch_state is FetchState.INITIALIZING}

    def request_offset_reset(self, tp: TopicPartition, strategy: OffsetResetStrategy | None = None) -> None:
        self._assigned_state(tp).reset(strategy or self.default_reset_strategy)

    def request_offset_reset_if_assigned(self, tp: TopicPartition, strategy: OffsetResetStrategy | None = None) -> None:
        if tp in self._assignment:
            self.request_offset_reset(tp, strategy)

    def reset_initializing_positions(self) -> None:
        """Partitions still INITIALIZING after committed offsets were looked up get the default reset
        strategy; with NONE this raises NoOffsetForPartitionError naming them."""
        no_offset = set()
        for tp, state in self._assignment.items():
            if state.fetch_state is FetchState.INITIALIZING:
                if self.default_reset_strategy is OffsetResetStrategy.NONE:
                    no_offset.add(tp)
                else:
                    state.reset(self.default_reset_strategy)
        if no_offset:
            raise NoOffsetForPartitionError(
                "Undefined offset with no reset policy for partitions: " + ", ".join(sorted(map(str, no_offset))),
                no_offset,
            )

    def is_offset_reset_needed(self, tp: TopicPartition) -> bool:
        return self._assigned_state(tp).awaiting_reset()

    def reset_strategy(self, tp: TopicPartition) -> OffsetResetStrategy | None:
        return self._assigned_state(tp).reset_strategy

    def partitions_needing_reset(self, now_ms: int) -> dict[TopicPartition, OffsetResetStrategy]:
        out = {}
        for tp, s in self._assignment.items():
            if s.awaiting_reset() and not s.awaiting_retry_backoff(now_ms) and s.reset_strategy is not None:
                out[tp] = s.reset_strategy
        return out

    def set_next_allowed_retry(self, partitions: Iterable[TopicPartition], next_allowed_ms: int) -> None:
        for tp in partitions:
            state = self._assignment.get(tp)
            if state is not None:
                state.next_retry_time_ms = next_allowed_ms

    def request_failed(self, partitions: Iterable[TopicPartition], next_retry_ms: int) -> None:
        self.set_next_allowed_retry(partitions, next_retry_ms)

    def is_fetchable(self, tp: TopicPartition) -> bool:
        state = self._assignment.get(tp)
        return state is not None and state.is_fetchable()

    def fetchable_partitions(self, predicate: Callable[[TopicPartition], bool] | None = None) -> list[TopicPartition]:
        return [tp for tp, s in self._assignment.items() if s.is_fetchable() and (predicate is None or predicate(tp))]

    def all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The position of every partition with a valid one, as offsets to commit."""
        out = {}
        for tp, s in self._assignment.items():
            if s.fetch_state.has_valid_position and s.position is not None:
                out[tp] = OffsetAndMetadata(s.position.offset, "", s.position.offset_epoch)
        return out

    # -- pause / resume ----------------------------------------------------------------------------

    def pause(self, tp: TopicPartition) -> None:
        self._assigned_state(tp).paused = True

    def resume(self, tp: TopicPartition) -> None:
        self._assigned_state(tp).paused = False

    def is_paused(self, tp: TopicPartition) -> bool:
        state = self._assignment.get(tp)
        return state is not None and state.paused

    def paused_partitions(self) -> set[TopicPartition]:
        return {tp for tp, s in self._assignment.items() if s.paused}

    # -- offsets known from fetch responses ------------------------------------------------------

    def update_high_watermark(self, tp: TopicPartition, hw: int) -> None:
        state = self._assignment.get(tp)
        if state is not None and hw >= 0:
            state.high_watermark = hw

    def update_log_start_offset(self, tp: TopicPartition, lso: int) -> None:
        state = self._assignment.get(tp)
        if state is not None and lso >= 0:
            state.log_start_offset = lso

    def update_last_stable_offset(self, tp: TopicPartition, lso: int) -> None:
        state = self._assignment.get(tp)
        if state is not None and lso >= 0:
            state.last_stable_offset = lso

    def partition_lag(self, tp: TopicPartition, read_committed: bool) -> int | None:
        state = self._assignment.get(tp)
        if state is None or state.position is None:
            return None
        end = state.last_stable_offset if read_committed else state.high_watermark
        return None if end is None else end - state.position.offset

    def partition_end_offset(self, tp: TopicPartition, read_committed: bool) -> int | None:
        state = self._assigned_state(tp)
        return state.last_stable_offset if read_committed else state.high_watermark
