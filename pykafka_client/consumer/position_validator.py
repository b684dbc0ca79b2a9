"""Position validation after a leader change and log-truncation detection (KIP-320; Java: the
``validatePositionsIfNeeded`` part of OffsetFetcher and OffsetsForLeaderEpochUtils).

* :meth:`PositionValidator.validate_positions_if_needed` runs in the application thread on every
  ``poll()`` / ``position()``: it first applies the answers received since the last call (raising a
  LogTruncationError or a fatal error found there), then, if the metadata changed, compares every
  position's leader with the current one (a changed leader or epoch puts a position with a known
  ``offset_epoch`` in AWAIT_VALIDATION), and sends one OffsetsForLeaderEpoch request per leader for the
  positions awaiting validation. Until a position is validated its partition is not fetched.
* The answer for a partition is the end offset of the position's epoch on the current leader. An end
  offset at or above the position validates it; below it, the leader's log diverged (records after the
  end offset were lost, e.g. by an unclean election or an acks=1 write): with a reset policy the position
  moves back to that end offset, with ``auto.offset.reset=none`` the application gets a LogTruncationError
  naming the divergent offsets and must seek.
* Response handlers (any thread) only queue the outcome; it is applied by the next call in the
  application thread, which owns the SubscriptionState. Retriable partition errors wait
  ``retry.backoff.ms`` and refresh metadata; a leader without OffsetsForLeaderEpoch v3 cannot validate
  for a consumer, so its positions are used as they are.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass, field

from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.subscription_state import FetchPosition, LogTruncation, SubscriptionState
from pykafka_client.errors import (
    KafkaError,
    LogTruncationError,
    TopicAuthorizationFailedError,
    UnsupportedVersionError,
    for_code,
)
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.messages.offset_for_leader_epoch_request import OffsetForLeaderEpochRequest
from pykafka_client.protocol.messages.offset_for_leader_epoch_response import OffsetForLeaderEpochResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import Time

log = logging.getLogger(__name__)

#: The first OffsetsForLeaderEpoch version a consumer may send (topic DESCRIBE permission suffices, and
#: the current leader epoch fences a stale leader); Java's ``forConsumer`` builder has the same floor.
CONSUMER_MIN_VERSION = 3
CONSUMER_REPLICA_ID = -1
_TOPIC_AUTHORIZATION_FAILED = 29


@dataclass(slots=True)
class EpochEndOffsets:
    """One response, parsed: end offsets (epoch, offset) per partition and the partitions to retry."""

    end_offsets: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    to_retry: set[TopicPartition] = field(default_factory=set)
    need_metadata: bool = False


def build_request(positions: dict[TopicPartition, FetchPosition]) -> OffsetForLeaderEpochRequest:
    """Ask for the end offset of each position's epoch, fenced by the leader epoch it expects."""
    topics: dict[str, OffsetForLeaderEpochRequest.OffsetForLeaderTopic] = {}
    for tp, position in positions.items():
        t = topics.setdefault(tp.topic, OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=tp.topic))
        t.partitions.append(
            OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=tp.partition,
                current_leader_epoch=position.current_leader_epoch if position.current_leader_epoch is not None else -1,
                leader_epoch=position.offset_epoch if position.offset_epoch is not None else -1,
            )
        )
    return OffsetForLeaderEpochRequest(replica_id=CONSUMER_REPLICA_ID, topics=list(topics.values()))


def parse_response(body: object, asked: set[TopicPartition]) -> EpochEndOffsets:
    """Sort the answer: end offsets, partitions to retry (leader moved, epoch not known yet, storage
    errors, anything unexpected), TopicAuthorizationFailedError raised."""
    result = EpochEndOffsets()
    if not isinstance(body, OffsetForLeaderEpochResponse):
        result.to_retry |= asked
        return result
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.topic, p.partition)
            if tp not in asked:
                continue
            if p.error_code == 0:
                result.end_offsets[tp] = (p.leader_epoch, p.end_offset)
                continue
            if p.error_code == _TOPIC_AUTHORIZATION_FAILED:
                raise TopicAuthorizationFailedError(f"not authorized to validate the position of topic {tp.topic}")
            cls = for_code(p.error_code)
            if not cls.retriable:
                log.warning("OffsetsForLeaderEpoch for %s failed with %s; retrying", tp, cls.__name__)
            else:
                log.debug("OffsetsForLeaderEpoch for %s failed with %s; retrying", tp, cls.__name__)
            result.need_metadata = result.need_metadata or cls.invalid_metadata
            result.to_retry.add(tp)
    result.to_retry |= asked - set(result.end_offsets) - result.to_retry
    return result


def truncation_error(truncations: list[LogTruncation]) -> LogTruncationError:
    """The error for the application, saying what happened and what to do."""
    fetch_offsets: dict[object, int] = {t.partition: t.fetch_position.offset for t in truncations}
    divergent: dict[object, object] = {t.partition: t.divergent_offset for t in truncations}
    parts = []
    for t in truncations:
        where = "unknown" if t.divergent_offset is None else str(t.divergent_offset.offset)
        parts.append(f"{t.partition} (position {t.fetch_position.offset}, first divergent offset {where})")
    return LogTruncationError(
        "log truncation detected after a leader change for " + ", ".join(parts) + ": the new leader's log "
        "ends before the consumer's position, so records after the divergent offset were lost (an unclean "
        "leader election or writes with acks<all). auto.offset.reset is none: seek each partition (for example "
        "to its divergent offset, error.divergent_offsets) to continue, or set auto.offset.reset so the consumer "
        "moves to the divergent offset itself",
        fetch_offsets,
        divergent,
    )


_Outcome = EpochEndOffsets | BaseException


class PositionValidator:
    """See module docstring."""

    def __init__(
        self,
        client: ConsumerClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        time: Time,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30000,
    ) -> None:
        self.client = client
        self.metadata = metadata
        self.subscriptions = subscriptions
        self.time = time
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self._lock = threading.Lock()
        self._outcomes: list[tuple[dict[TopicPartition, FetchPosition], _Outcome]] = []
        self._metadata_version = -1
        self._assignment_id = -1

    def validate_positions_if_needed(self) -> None:
        """Apply answers, re-check positions on a metadata change, send validations (application thread)."""
        self._apply_outcomes()
        self._validate_positions_on_metadata_change()
        now = self.time.hi_res_clock_ms()
        to_validate = self.subscriptions.partitions_needing_validation(now)
        if not to_validate:
            return
        per_node: dict[Node, dict[TopicPartition, FetchPosition]] = {}
        cluster = self.metadata.fetch()
        for tp, position in to_validate.items():
            node = cluster.node_by_id(position.current_leader) if position.current_leader is not None else None
            if node is None:
                self.metadata.request_update()
                self.subscriptions.set_next_allowed_retry([tp], now + self.retry_backoff_ms)
                continue
            per_node.setdefault(node, {})[tp] = position
        for node, positions in per_node.items():
            # no second request for these partitions while this one is in flight
            self.subscriptions.set_next_allowed_retry(positions, now + self.request_timeout_ms)
            log.debug("validating positions on node %s: %s", node.id, positions)
            future = self.client.send(
                node, build_request(positions), self.request_timeout_ms, oldest_allowed_version=CONSUMER_MIN_VERSION
            )
            future.add_callbacks(
                functools.partial(self._on_response, positions),
                functools.partial(self._queue, positions),
            )

    def _validate_positions_on_metadata_change(self) -> None:
        version = self.metadata.update_version()
        assignment_id = self.subscriptions.assignment_id
        if version == self._metadata_version and assignment_id == self._assignment_id:
            return
        self._metadata_version = version
        self._assignment_id = assignment_id
        for tp in self.subscriptions.assigned_partitions_list():
            self.subscriptions.maybe_validate_position_for_current_leader(tp, self.metadata.current_leader(tp))

    def _on_response(self, positions: dict[TopicPartition, FetchPosition], response: ClientResponse) -> None:
        outcome: _Outcome
        try:
            outcome = parse_response(response.response_body, set(positions))
        except Exception as e:
            outcome = e
        self._queue(positions, outcome)

    def _queue(self, positions: dict[TopicPartition, FetchPosition], outcome: _Outcome) -> None:
        with self._lock:
            self._outcomes.append((positions, outcome))

    def _apply_outcomes(self) -> None:
        with self._lock:
            outcomes, self._outcomes = self._outcomes, []
        now = self.time.hi_res_clock_ms()
        fatal: BaseException | None = None
        truncations: list[LogTruncation] = []
        for positions, outcome in outcomes:
            if isinstance(outcome, UnsupportedVersionError):
                log.info(
                    "the leader cannot validate positions (OffsetsForLeaderEpoch v%d or later is needed); using "
                    "the positions of %s without validation", CONSUMER_MIN_VERSION, sorted(map(str, positions)),
                )
                for tp in positions:
                    self.subscriptions.complete_validation_without_check(tp)
                continue
            if isinstance(outcome, BaseException):
                self.subscriptions.request_failed(positions, now + self.retry_backoff_ms)
                self.metadata.request_update()
                if not (isinstance(outcome, KafkaError) and outcome.retriable) and fatal is None:
                    fatal = outcome
                continue
            for tp, (end_epoch, end_offset) in outcome.end_offsets.items():
                truncation = self.subscriptions.maybe_complete_validation(tp, positions[tp], end_epoch, end_offset)
                if truncation is not None:
                    truncations.append(truncation)
            if outcome.to_retry:
                self.subscriptions.request_failed(outcome.to_retry, now + self.retry_backoff_ms)
            if outcome.need_metadata:
                self.metadata.request_update()
        if fatal is not None:
            raise fatal
        if truncations:
            raise truncation_error(truncations)
