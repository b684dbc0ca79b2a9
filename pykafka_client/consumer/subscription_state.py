"""What the consumer is subscribed to, what is assigned, and each assigned partition's fetch state
(Java: SubscriptionState, TopicPartitionState, FetchState, FetchPosition).

Subscription types are exclusive: topics (AUTO_TOPICS), a pattern (AUTO_PATTERN) or a manual
assignment (USER_ASSIGNED); switching between them without ``unsubscribe()`` raises
IllegalStateError and leaves the state unchanged.

Per assigned partition the fetch state machine is::

    INITIALIZING --seek/committed--> FETCHING
    INITIALIZING --request_offset_reset--> AWAIT_RESET --reset (ListOffsets)--> FETCHING
    FETCHING --offset out of range--> AWAIT_RESET

A partition is *fetchable* when it has a valid position and is neither paused nor pending
revocation. Log-truncation detection (KIP-320, AWAIT_VALIDATION) is not implemented: positions are
used as they are.

This object is owned by the application thread; the heartbeat thread never touches it (all
assignment changes happen in ``poll()``), which is why it needs no lock of its own. It is guarded by
the consumer's single-thread check (``KafkaConsumer._acquire``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from enum import Enum

from pykafka_client.consumer.rebalance_listener import ConsumerRebalanceListener, NoOpConsumerRebalanceListener
from pykafka_client.errors import IllegalArgumentError, IllegalStateError, NoOffsetForPartitionError
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

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

    @property
    def has_position(self) -> bool:
        return self is FetchState.FETCHING

    @property
    def has_valid_position(self) -> bool:
        return self is FetchState.FETCHING


_VALID_TRANSITIONS: dict[FetchState, frozenset[FetchState]] = {
    FetchState.INITIALIZING: frozenset({FetchState.FETCHING, FetchState.AWAIT_RESET}),
    FetchState.FETCHING: frozenset({FetchState.FETCHING, FetchState.AWAIT_RESET}),
    FetchState.AWAIT_RESET: frozenset({FetchState.FETCHING, FetchState.AWAIT_RESET}),
}


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """The offset to fetch next, the leader epoch of the record before it (if known) and the leader
    (node id and epoch) it was last seen on."""

    offset: int
    offset_epoch: int | None = None
    current_leader: int | None = None
    current_leader_epoch: int | None = None


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
        state.seek(position)
        return True

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
