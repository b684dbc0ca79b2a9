"""ListOffsets: position resets and offset look-ups (Java: OffsetFetcher, OffsetsRequestManager's
classic part).

* :meth:`OffsetFetcher.reset_positions_if_needed` is asynchronous: it sends ListOffsets (earliest =
  -2, latest = -1) to the leaders of partitions awaiting a reset. Response handlers (any thread) only
  queue the outcome; the queue is applied in the application thread on the next call, where the
  position is set unless the partition was reassigned or seeked meanwhile. Failed partitions wait
  ``retry.backoff.ms`` before the next attempt; a fatal error (e.g. topic authorization) is raised
  once from the next call.
* :meth:`fetch_offsets_by_times` (offsets_for_times, beginning_offsets, end_offsets) blocks until
  every partition has an answer or the timer expires (KafkaTimeoutError), retrying retriable errors
  after a metadata refresh or the retry backoff.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.consumer.client_adapter import ConsumerClient, timeout_error
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.subscription_state import FetchPosition, OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import (
    KafkaError,
    TopicAuthorizationFailedError,
    for_code,
)
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages.list_offsets_request import ListOffsetsRequest
from pykafka_client.protocol.messages.list_offsets_response import ListOffsetsResponse
from pykafka_client.structs import Node, OffsetAndTimestamp, TopicPartition
from pykafka_client.utils.time import Time, Timer

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
_TOPIC_AUTHORIZATION_FAILED = 29
_UNSUPPORTED_FOR_MESSAGE_FORMAT = 43


@dataclass(frozen=True, slots=True)
class ListOffsetData:
    """One partition's ListOffsets answer; ``offset`` is None when no record matches the timestamp."""

    offset: int | None
    timestamp: int | None
    leader_epoch: int | None


@dataclass(slots=True)
class ListOffsetResult:
    """Per-request outcome: answered partitions, partitions to retry, and whether metadata is stale."""

    fetched: dict[TopicPartition, ListOffsetData]
    to_retry: set[TopicPartition]
    need_metadata: bool = False


#: ListOffsets timestamp for the record with the largest timestamp (KIP-734).
MAX_TIMESTAMP = -3


def oldest_list_offsets_version(isolation_level: int, timestamps: Iterable[int]) -> int:
    """The oldest ListOffsets version that means what the consumer asks (Java's
    ``ListOffsetsRequest.Builder.forConsumer``): read_committed needs v2 (isolation level), a lookup by
    timestamp v1 (v0 answers a list of segment offsets), the max-timestamp lookup v7. Older brokers get a
    clear UnsupportedVersionError instead of a different question."""
    oldest = 2 if isolation_level == 1 else 0
    for ts in timestamps:
        if ts == MAX_TIMESTAMP:
            oldest = max(oldest, 7)
        elif ts >= 0:
            oldest = max(oldest, 1)
    return oldest


class OffsetFetcher:
    """See module docstring."""

    def __init__(
        self,
        client: ConsumerClient,
        metadata: ConsumerMetadata,
        subscriptions: SubscriptionState,
        time: Time,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30000,
        isolation_level: int = 0,
    ) -> None:
        self.client = client
        self.metadata = metadata
        self.subscriptions = subscriptions
        self.time = time
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.isolation_level = isolation_level
        self._lock = threading.Lock()
        self._reset_outcomes: list[
            tuple[dict[TopicPartition, OffsetResetStrategy], ListOffsetResult | BaseException]
        ] = []

    # -- requests --------------------------------------------------------------------------------

    def _group_by_leader(
        self, timestamps: dict[TopicPartition, int]
    ) -> tuple[dict[Node, dict[TopicPartition, tuple[int, int]]], set[TopicPartition]]:
        per_node: dict[Node, dict[TopicPartition, tuple[int, int]]] = {}
        no_leader: set[TopicPartition] = set()
        for tp, ts in timestamps.items():
            leader = self.metadata.current_leader(tp)
            if leader.leader is None:
                no_leader.add(tp)
                continue
            epoch = leader.epoch if leader.epoch is not None else -1
            per_node.setdefault(leader.leader, {})[tp] = (ts, epoch)
        if no_leader:
            self.metadata.request_update()
        return per_node, no_leader

    def _send_list_offsets(
        self, node: Node, parts: dict[TopicPartition, tuple[int, int]]
    ) -> RequestFuture[ClientResponse]:
        topics: dict[str, ListOffsetsRequest.ListOffsetsTopic] = {}
        for tp, (ts, epoch) in parts.items():
            t = topics.setdefault(tp.topic, ListOffsetsRequest.ListOffsetsTopic(name=tp.topic))
            t.partitions.append(
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=tp.partition, current_leader_epoch=epoch, timestamp=ts
                )
            )
        request = ListOffsetsRequest(replica_id=-1, isolation_level=self.isolation_level, topics=list(topics.values()))
        oldest = oldest_list_offsets_version(self.isolation_level, [ts for ts, _ in parts.values()])
        return self.client.send(node, request, self.request_timeout_ms, oldest_allowed_version=oldest)

    def _parse(self, response: ClientResponse, asked: Iterable[TopicPartition]) -> ListOffsetResult:
        body = response.response_body
        result = ListOffsetResult({}, set())
        if not isinstance(body, ListOffsetsResponse):
            result.to_retry.update(asked)
            return result
        version = response.request_header.api_version
        seen: set[TopicPartition] = set()
        for topic in body.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                seen.add(tp)
                err = p.error_code
                if err == 0:
                    if version == 0:
                        offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                        result.fetched[tp] = ListOffsetData(offset if offset >= 0 else None, None, None)
                    else:
                        result.fetched[tp] = ListOffsetData(
                            p.offset if p.offset >= 0 else None,
                            p.timestamp if p.timestamp >= 0 else None,
                            p.leader_epoch if p.leader_epoch >= 0 else None,
                        )
                elif err == _UNSUPPORTED_FOR_MESSAGE_FORMAT:
                    result.fetched[tp] = ListOffsetData(None, None, None)
                elif err == _TOPIC_AUTHORIZATION_FAILED:
                    raise TopicAuthorizationFailedError(f"not authorized to list offsets of topic {tp.topic}")
                else:
                    cls = for_code(err)
                    if not cls.retriable:
                        raise cls(f"ListOffsets for {tp} failed")
                    if cls.invalid_metadata:
                        result.need_metadata = True
                    result.to_retry.add(tp)
        for tp in asked:
            if tp not in seen:
                result.to_retry.add(tp)
        return result

    # -- asynchronous resets ---------------------------------------------------------------------

    def reset_positions_if_needed(self) -> None:
        """Apply finished resets, then send ListOffsets for partitions awaiting one."""
        self._apply_reset_outcomes()
        now = self.time.hi_res_clock_ms()
        to_reset = self.subscriptions.partitions_needing_reset(now)
        if not to_reset:
            return
        timestamps = {tp: strategy.timestamp for tp, strategy in to_reset.items()}
        per_node, no_leader = self._group_by_leader(timestamps)
        self.subscriptions.set_next_allowed_retry(no_leader, now + self.retry_backoff_ms)
        for node, parts in per_node.items():
            # no second request for these partitions while this one is in flight
            self.subscriptions.set_next_allowed_retry(parts, now + self.request_timeout_ms)
            strategies = {tp: to_reset[tp] for tp in parts}
            future = self._send_list_offsets(node, parts)
            future.add_callbacks(
                functools.partial(self._on_reset_response, strategies),
                functools.partial(self._on_reset_failure, strategies),
            )

    def _on_reset_response(
        self, strategies: dict[TopicPartition, OffsetResetStrategy], response: ClientResponse
    ) -> None:
        outcome: ListOffsetResult | BaseException
        try:
            outcome = self._parse(response, strategies)
        except Exception as e:
            outcome = e
        with self._lock:
            self._reset_outcomes.append((strategies, outcome))

    def _on_reset_failure(self, strategies: dict[TopicPartition, OffsetResetStrategy], exc: BaseException) -> None:
        with self._lock:
            self._reset_outcomes.append((strategies, exc))

    def _apply_reset_outcomes(self) -> None:
        with self._lock:
            outcomes, self._reset_outcomes = self._reset_outcomes, []
        fatal: BaseException | None = None
        now = self.time.hi_res_clock_ms()
        for strategies, outcome in outcomes:
            if isinstance(outcome, BaseException):
                self.subscriptions.request_failed(strategies, now + self.retry_backoff_ms)
                self.metadata.request_update()
                if not _is_retriable(outcome) and fatal is None:
                    fatal = outcome
                continue
            for tp, data in outcome.fetched.items():
                strategy = strategies[tp]
                if data.offset is None:
                    self.subscriptions.request_failed([tp], now + self.retry_backoff_ms)
                    continue
                leader = self.metadata.current_leader(tp)
                position = FetchPosition(
                    data.offset, data.leader_epoch, leader.leader.id if leader.leader else None, leader.epoch
                )
                if self.subscriptions.maybe_seek_unvalidated(tp, position, strategy):
                    log.info("reset offset of %s to %d (%s)", tp, data.offset, strategy.value)
            if outcome.to_retry:
                self.subscriptions.request_failed(outcome.to_retry, now + self.retry_backoff_ms)
            if outcome.need_metadata:
                self.metadata.request_update()
        if fatal is not None:
            raise fatal

    # -- blocking look-ups -----------------------------------------------------------------------

    def fetch_offsets_by_times(
        self, timestamps: dict[TopicPartition, int], timer: Timer
    ) -> dict[TopicPartition, ListOffsetData]:
        """Answers for every partition, or KafkaTimeoutError when ``timer`` expires first."""
        result: dict[TopicPartition, ListOffsetData] = {}
        remaining = dict(timestamps)
        if not remaining:
            return result
        # topics outside the subscription need metadata too
        self.metadata.add_transient_topics({tp.topic for tp in remaining})
        try:
            return self._fetch_offsets_by_times(remaining, result, timer)
        finally:
            self.metadata.clear_transient_topics()

    def _fetch_offsets_by_times(
        self, remaining: dict[TopicPartition, int], result: dict[TopicPartition, ListOffsetData], timer: Timer
    ) -> dict[TopicPartition, ListOffsetData]:
        while True:
            per_node, no_leader = self._group_by_leader(remaining)
            need_metadata = bool(no_leader)
            pending = [(self._send_list_offsets(node, parts), set(parts)) for node, parts in per_node.items()]
            for future, asked in pending:
                if not self.client.poll_future(future, timer):
                    continue
                if future.failed():
                    exc = future.exception()
                    if not isinstance(exc, KafkaError) or not exc.retriable:
                        raise exc
                    need_metadata = need_metadata or exc.invalid_metadata
                    continue
                parsed = self._parse(future.value(), asked)
                for tp, data in parsed.fetched.items():
                    result[tp] = data
                    remaining.pop(tp, None)
                need_metadata = need_metadata or parsed.need_metadata
            if not remaining:
                return result
            timer.update()
            if timer.is_expired():
                raise timeout_error(
                    self.client,
                    f"failed to get offsets by times in {timer.timeout_ms()}ms for partitions "
                    + ", ".join(sorted(map(str, remaining))),
                )
            if need_metadata:
                self.client.await_metadata_update(timer)
            else:
                timer.sleep(self.retry_backoff_ms)

    def offsets_for_times(
        self, timestamps: dict[TopicPartition, int], timer: Timer
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """Java OffsetFetcher.offsetsForTimes: None for a partition with no record at or after the time."""
        data = self.fetch_offsets_by_times(timestamps, timer)
        return {
            tp: None
            if d.offset is None
            else OffsetAndTimestamp(d.offset, d.timestamp if d.timestamp is not None else -1, d.leader_epoch)
            for tp, d in ((tp, data[tp]) for tp in timestamps)
        }

    def beginning_or_end_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int, timer: Timer
    ) -> dict[TopicPartition, int]:
        data = self.fetch_offsets_by_times({tp: timestamp for tp in partitions}, timer)
        return {tp: d.offset for tp, d in data.items() if d.offset is not None}


def _is_retriable(exc: BaseException) -> bool:
    return isinstance(exc, KafkaError) and exc.retriable
