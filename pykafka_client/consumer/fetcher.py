"""Fetch requests and turning their responses into records (Java: Fetcher, AbstractFetcher,
FetchCollector).

* :meth:`Fetcher.send_fetches` builds one FetchRequest per leader for the fetchable partitions that
  have no buffered data, skipping leaders that already have a fetch in flight (one in flight per node,
  the next one pipelined as soon as its response arrives).
* Responses are turned into :class:`CompletedFetch` objects in the thread that completes them (maybe
  the heartbeat thread): that handler touches only the fetch buffer and the pending-node set, both
  under the fetcher's leaf lock.
* :meth:`Fetcher.collect_fetch` (application thread) validates each completed fetch against the
  current position (stale data is dropped), handles partition errors (metadata refresh on leader
  changes, offset reset or OffsetOutOfRangeClientError on OFFSET_OUT_OF_RANGE) and returns at most
  ``max.poll.records`` records, advancing positions.

* Incremental fetch sessions (KIP-227) per broker (``fetch_session_handler.py``): after a full fetch
  that opens a session, requests carry only changed partitions plus ``forgotten`` ones.

* Leader changes: a NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH answer asks for metadata, and its
  KIP-951 hint (current leader + node endpoints) updates metadata at once when the epoch is newer; a
  position whose leader or epoch changed is validated (KIP-320, ``position_validator.py``) before the
  partition is fetched again.

Not implemented: fetching from followers (KIP-392); the diverging-epoch check inside Fetch (v12+
``last_fetched_epoch``): truncation is found by OffsetsForLeaderEpoch validation instead.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pykafka_client.config import AbstractConfig
from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.completed_fetch import CompletedFetch, Deserialize, FetchBuffer, FetchedColumns
from pykafka_client.consumer.consumer_record import ConsumerRecord
from pykafka_client.consumer.fetch_session_handler import (
    FetchSessionHandler,
    FetchSessionRequest,
    PartitionFetchState,
)
from pykafka_client.consumer.subscription_state import FetchPosition, OffsetResetStrategy, SubscriptionState
from pykafka_client.errors import (
    IllegalStateError,
    OffsetOutOfRangeClientError,
    RecordTooLargeError,
    TopicAuthorizationFailedError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.messages.fetch_request import FetchRequest
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.protocol.records import MemoryRecords
from pykafka_client.serialization import ByteArrayDeserializer, Deserializer
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import Time

log = logging.getLogger(__name__)

READ_UNCOMMITTED = 0
READ_COMMITTED = 1

_NONE = 0
_OFFSET_OUT_OF_RANGE = 1
_CORRUPT_MESSAGE = 2
_UNKNOWN_TOPIC_OR_PARTITION = 3
_NOT_LEADER_OR_FOLLOWER = 6
_REPLICA_NOT_AVAILABLE = 9
_TOPIC_AUTHORIZATION_FAILED = 29
_KAFKA_STORAGE_ERROR = 56
_FENCED_LEADER_EPOCH = 74
_UNKNOWN_LEADER_EPOCH = 75
_OFFSET_NOT_AVAILABLE = 78
_UNKNOWN_TOPIC_ID = 100
_INCONSISTENT_TOPIC_ID = 103
_UNKNOWN_SERVER_ERROR = -1
_REFRESH_METADATA = {
    _NOT_LEADER_OR_FOLLOWER,
    _REPLICA_NOT_AVAILABLE,
    _KAFKA_STORAGE_ERROR,
    _FENCED_LEADER_EPOCH,
    _OFFSET_NOT_AVAILABLE,
    _UNKNOWN_TOPIC_OR_PARTITION,
    _UNKNOWN_TOPIC_ID,
    _INCONSISTENT_TOPIC_ID,
}

_T = TypeVar("_T")


#: FetchRequest v13+ names topics by id; the response is mapped back with the request's ids.
_TOPIC_ID_MIN_VERSION = 13


@dataclass(slots=True)
class FetchConfig:
    """Fetch settings (the ``fetch.*``/``max.*`` consumer configs)."""

    min_bytes: int = 1
    max_bytes: int = 52428800
    max_wait_ms: int = 500
    fetch_size: int = 1048576  # max.partition.fetch.bytes
    max_poll_records: int = 500
    check_crcs: bool = True
    isolation_level: int = READ_UNCOMMITTED
    client_rack: str = ""
    request_timeout_ms: int = 30000
    key_deserializer: Deserialize = None  # None: keys stay bytes
    value_deserializer: Deserialize = None

    @classmethod
    def from_consumer_config(
        cls, cfg: AbstractConfig, key_deserializer: Deserializer[Any], value_deserializer: Deserializer[Any]
    ) -> FetchConfig:
        """Java: ``new FetchConfig(config, deserializers, isolationLevel)``. The bytes deserializer is
        not called at all (records carry the raw bytes)."""
        return cls(
            min_bytes=cfg["fetch.min.bytes"],
            max_bytes=cfg["fetch.max.bytes"],
            max_wait_ms=cfg["fetch.max.wait.ms"],
            fetch_size=cfg["max.partition.fetch.bytes"],
            max_poll_records=cfg["max.poll.records"],
            check_crcs=cfg["check.crcs"],
            isolation_level=READ_COMMITTED if cfg["isolation.level"] == "read_committed" else READ_UNCOMMITTED,
            client_rack=cfg["client.rack"],
            request_timeout_ms=cfg["request.timeout.ms"],
            key_deserializer=None if type(key_deserializer) is ByteArrayDeserializer else key_deserializer.deserialize,
            value_deserializer=(
                None if type(value_deserializer) is ByteArrayDeserializer else value_deserializer.deserialize
            ),
        )


@dataclass(slots=True)
class FetchRequestData:
    """What was asked of one node: fetch offsets per partition and the topic ids used."""

    request: FetchRequest
    offsets: dict[TopicPartition, int]
    id_to_name: dict[uuid.UUID, str]
    session: FetchSessionRequest | None = None
    all_topic_ids: bool = True


class Fetcher:
    """See module docstring."""

    def __init__(
        self,
        client: ConsumerClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        config: FetchConfig,
        time: Time,
    ) -> None:
        self.client = client
        self.metadata = metadata
        self.subscriptions = subscriptions
        self.config = config
        self.time = time
        self.fetch_buffer = FetchBuffer()
        self._lock = threading.Lock()
        self._nodes_with_pending_fetch_requests: set[int] = set()
        self._sessions: dict[int, FetchSessionHandler] = {}

    # -- sending -------------------------------------------------------------------------------

    def _topic_id(self, topic: str) -> uuid.UUID | None:
        tid = self.metadata.fetch().topic_id(topic)
        return tid if isinstance(tid, uuid.UUID) and tid.int != 0 else None

    def prepare_fetch_requests(self) -> dict[Node, FetchRequestData]:
        """One FetchRequest per leader node, for fetchable partitions without buffered data."""
        buffered = self.fetch_buffer.buffered_partitions()
        with self._lock:
            pending = set(self._nodes_with_pending_fetch_requests)
        per_node: dict[Node, dict[TopicPartition, tuple[int, int]]] = {}
        for tp in self.subscriptions.fetchable_partitions(lambda p: p not in buffered):
            leader_and_epoch = self.metadata.current_leader(tp)
            node = leader_and_epoch.leader
            if node is None:
                self.metadata.request_update()
                continue
            # A position last validated against another leader or epoch is validated first (KIP-320).
            if self.subscriptions.maybe_validate_position_for_current_leader(tp, leader_and_epoch):
                continue
            position = self.subscriptions.position(tp)
            if position is None:
                continue
            if node.id in pending:
                continue
            if self.client.is_unavailable(node):
                continue
            epoch = leader_and_epoch.epoch if leader_and_epoch.epoch is not None else -1
            per_node.setdefault(node, {})[tp] = (position.offset, epoch)
        out: dict[Node, FetchRequestData] = {}
        cfg = self.config
        for node, parts in per_node.items():
            wanted = {tp: PartitionFetchState(off, epoch, cfg.fetch_size) for tp, (off, epoch) in parts.items()}
            with self._lock:
                handler = self._sessions.get(node.id)
                if handler is None:
                    handler = self._sessions[node.id] = FetchSessionHandler(node.id)
                session_request = handler.build(wanted)
            topics: dict[str, FetchRequest.FetchTopic] = {}
            id_to_name: dict[uuid.UUID, str] = {}
            ids: dict[str, uuid.UUID | None] = {}
            for topic in {tp.topic for tp in session_request.session_partitions} | {
                tp.topic for tp in session_request.to_forget
            }:
                tid = self._topic_id(topic)
                ids[topic] = tid
                if tid is not None:
                    id_to_name[tid] = topic
            for tp, st in session_request.to_send.items():
                ft = topics.get(tp.topic)
                if ft is None:
                    ft = topics[tp.topic] = FetchRequest.FetchTopic(topic=tp.topic)
                    tid = ids.get(tp.topic)
                    if tid is not None:
                        ft.topic_id = tid
                ft.partitions.append(
                    FetchRequest.FetchPartition(
                        partition=tp.partition,
                        current_leader_epoch=st.current_leader_epoch,
                        fetch_offset=st.fetch_offset,
                        partition_max_bytes=st.max_bytes,
                    )
                )
            forgotten: dict[str, FetchRequest.ForgottenTopic] = {}
            for tp in session_request.to_forget:
                fg = forgotten.get(tp.topic)
                if fg is None:
                    fg = forgotten[tp.topic] = FetchRequest.ForgottenTopic(topic=tp.topic)
                    tid = ids.get(tp.topic)
                    if tid is not None:
                        fg.topic_id = tid
                fg.partitions.append(tp.partition)
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=cfg.max_wait_ms,
                min_bytes=cfg.min_bytes,
                max_bytes=cfg.max_bytes,
                isolation_level=cfg.isolation_level,
                session_id=session_request.session_id,
                session_epoch=session_request.epoch,
                topics=list(topics.values()),
                forgotten_topics_data=list(forgotten.values()),
                rack_id=cfg.client_rack,
            )
            offsets = {tp: st.fetch_offset for tp, st in session_request.session_partitions.items()}
            all_ids = all(tid is not None for tid in ids.values())
            out[node] = FetchRequestData(request, offsets, id_to_name, session_request, all_ids)
        return out

    def send_fetches(self) -> int:
        """Send a fetch to every leader that has fetchable partitions and none in flight."""
        requests = self.prepare_fetch_requests()
        for node, data in requests.items():
            with self._lock:
                self._nodes_with_pending_fetch_requests.add(node.id)
            # Without an id for every topic the request must use names (v12 at most).
            future = self.client.send(
                node,
                data.request,
                self.config.request_timeout_ms + self.config.max_wait_ms,
                latest_allowed_version=None if data.all_topic_ids else _TOPIC_ID_MIN_VERSION - 1,
            )
            future.add_callbacks(
                functools.partial(self._handle_fetch_success, node, data),
                functools.partial(self._handle_fetch_failure, node),
            )
        return len(requests)

    def _handle_fetch_success(self, node: Node, data: FetchRequestData, response: ClientResponse) -> None:
        try:
            body = response.response_body
            if not isinstance(body, FetchResponse):
                return
            if data.session is not None:
                with self._lock:
                    handler = self._sessions.get(node.id)
                    ok = handler is None or handler.handle_response(data.session, body.error_code, body.session_id)
                if not ok:
                    log.debug("fetch session with node %s reset (error %d)", node, body.error_code)
                    return
            if body.error_code != _NONE:
                log.debug("fetch to node %s failed with error %d", node, body.error_code)
                return
            version = response.request_header.api_version
            leader_hints: dict[tuple[str, int], tuple[int, int]] = {}
            for topic_response in body.responses:
                if version >= _TOPIC_ID_MIN_VERSION:
                    topic = data.id_to_name.get(topic_response.topic_id)
                else:
                    topic = topic_response.topic
                if topic is None:
                    continue
                for pd in topic_response.partitions:
                    tp = TopicPartition(topic, pd.partition_index)
                    offset = data.offsets.get(tp)
                    if offset is None:
                        continue  # a partition we did not ask for
                    if pd.error_code in (_NOT_LEADER_OR_FOLLOWER, _FENCED_LEADER_EPOCH):
                        cl = pd.current_leader
                        if cl.leader_id >= 0 and cl.leader_epoch >= 0:
                            leader_hints[(tp.topic, tp.partition)] = (cl.leader_id, cl.leader_epoch)
                    self.fetch_buffer.add(CompletedFetch(tp, offset, pd, version))
            if leader_hints:
                self._apply_leader_hints(leader_hints, body)
        finally:
            with self._lock:
                self._nodes_with_pending_fetch_requests.discard(node.id)

    def _apply_leader_hints(self, hints: dict[tuple[str, int], tuple[int, int]], body: FetchResponse) -> None:
        """KIP-951: a NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH answer names the new leader; metadata
        takes it at once when its epoch is newer (the positions are re-validated against it on the next
        poll, in the application thread)."""
        nodes = [Node(e.node_id, e.host, e.port, e.rack) for e in body.node_endpoints]
        updated = self.metadata.update_partition_leadership(hints, nodes)
        if updated:
            log.debug("fetch response moved the leaders of %s", sorted(updated))

    def _handle_fetch_failure(self, node: Node, exc: BaseException) -> None:
        log.debug("fetch request to node %s failed: %s", node, exc)
        with self._lock:
            handler = self._sessions.get(node.id)
            if handler is not None:
                handler.handle_error()
            self._nodes_with_pending_fetch_requests.discard(node.id)

    def has_pending_fetch(self, node_id: int) -> bool:
        with self._lock:
            return node_id in self._nodes_with_pending_fetch_requests

    # -- collecting ----------------------------------------------------------------------------

    def has_available_fetches(self) -> bool:
        """Buffered data for a partition that can return it now (not paused): the poll condition."""
        return self.fetch_buffer.has_completed_fetches(self.subscriptions.is_fetchable)

    def clear_buffered_data_for_unassigned_partitions(self) -> None:
        self.fetch_buffer.retain_all(self.subscriptions.assigned_partitions())

    def _initialize(self, completed: CompletedFetch) -> CompletedFetch | None:
        """Check a completed fetch against the current state; handle its error code."""
        tp = completed.partition
        pd = completed.partition_data
        subs = self.subscriptions
        if not subs.has_valid_position(tp):
            return None
        position = subs.position(tp)
        if position is None or position.offset != completed.fetch_offset:
            return None  # the position moved since the request (seek, reset): stale data
        err = pd.error_code
        if err == _NONE:
            if pd.high_watermark >= 0:
                subs.update_high_watermark(tp, pd.high_watermark)
            if pd.log_start_offset >= 0:
                subs.update_log_start_offset(tp, pd.log_start_offset)
            if pd.last_stable_offset >= 0:
                subs.update_last_stable_offset(tp, pd.last_stable_offset)
            records = pd.records
            if records is not None and len(records) > 0:
                mr = MemoryRecords(records)  # type: ignore[arg-type]
                first = mr.first_batch_size()
                if first is not None and first > len(records):
                    raise RecordTooLargeError(
                        f"failed to make progress reading {tp} at offset {completed.fetch_offset}: the fetch "
                        f"response holds no complete batch (first batch is {first} bytes, "
                        f"{len(records)} received); increase max.partition.fetch.bytes or fetch.max.bytes"
                    )
            completed.initialized = True
            return completed
        if err in _REFRESH_METADATA:
            log.debug("fetch for %s returned error %d: refreshing metadata", tp, err)
            self.metadata.request_update()
        elif err == _OFFSET_OUT_OF_RANGE:
            if subs.default_reset_strategy is OffsetResetStrategy.NONE:
                raise OffsetOutOfRangeClientError(
                    f"fetch position {position.offset} is out of range for partition {tp}", {tp: position.offset}
                )
            log.info("fetch position %s is out of range for %s, resetting offset", position.offset, tp)
            subs.request_offset_reset(tp)
        elif err == _TOPIC_AUTHORIZATION_FAILED:
            raise TopicAuthorizationFailedError(f"not authorized to read topic {tp.topic}")
        elif err in (_UNKNOWN_LEADER_EPOCH, _UNKNOWN_SERVER_ERROR):
            log.debug("fetch for %s returned retriable error %d", tp, err)
        elif err == _CORRUPT_MESSAGE:
            raise KafkaError(f"encountered corrupt message when fetching offset {completed.fetch_offset} for {tp}")
        else:
            raise IllegalStateError(f"unexpected error code {err} while fetching {tp}")
        return None

    def _take_records(self, completed: CompletedFetch, max_records: int) -> tuple[list[ConsumerRecord[Any, Any]], int]:
        cfg = self.config
        records = completed.fetch_records(
            max_records,
            cfg.check_crcs,
            cfg.isolation_level == READ_COMMITTED,
            cfg.key_deserializer,
            cfg.value_deserializer,
        )
        return records, len(records)

    def _take_columns(self, completed: CompletedFetch, max_records: int) -> tuple[list[FetchedColumns], int]:
        start = completed.next_fetch_offset
        cfg = self.config
        columns = completed.fetch_columns(max_records, cfg.check_crcs, cfg.isolation_level == READ_COMMITTED)
        if not columns:
            return [], 0
        return [FetchedColumns(start, columns)], sum(c.num_records for c in columns)

    def _fetch_from(
        self, completed: CompletedFetch, max_records: int, take: Callable[[CompletedFetch, int], tuple[list[_T], int]]
    ) -> tuple[list[_T], int]:
        tp = completed.partition
        subs = self.subscriptions
        if not subs.is_fetchable(tp):
            completed.drain()  # revoked, paused or awaiting reset
            return [], 0
        position = subs.position(tp)
        if position is None or completed.next_fetch_offset != position.offset:
            completed.drain()
            return [], 0
        try:
            return take(completed, max_records)
        finally:
            if completed.last_epoch is not None and completed.last_epoch != position.offset_epoch:
                # a record written under a newer epoch than metadata knows: the cached leader is stale
                self.metadata.update_last_seen_epoch_if_newer(tp, completed.last_epoch)
            if completed.next_fetch_offset > position.offset:
                subs.seek_position(
                    tp,
                    FetchPosition(
                        completed.next_fetch_offset,
                        completed.last_epoch,
                        position.current_leader,
                        position.current_leader_epoch,
                    ),
                )

    def collect_fetch(self) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Up to ``max.poll.records`` records from buffered fetches (application thread only)."""
        return self._collect(self._take_records)

    def collect_columns(self) -> dict[TopicPartition, list[FetchedColumns]]:
        """:meth:`collect_fetch` as whole record batches decoded to columns (``column_fetch.poll_columns``):
        the same positions, skipping and errors, no object per record; ``max.poll.records`` is reached by
        whole batches (at least one per partition)."""
        return self._collect(self._take_columns)

    def _collect(
        self, take: Callable[[CompletedFetch, int], tuple[list[_T], int]]
    ) -> dict[TopicPartition, list[_T]]:
        fetched: dict[TopicPartition, list[_T]] = {}
        remaining = self.config.max_poll_records
        buffer = self.fetch_buffer
        paused: list[CompletedFetch] = []
        try:
            while remaining > 0:
                nil = buffer.next_in_line
                if nil is None or nil.is_consumed:
                    completed = buffer.peek()
                    if completed is None:
                        break
                    if not completed.initialized:
                        try:
                            nil = self._initialize(completed)
                        except Exception:
                            raw = completed.partition_data.records
                            if not fetched and (raw is None or len(raw) == 0):
                                buffer.poll()
                            raise
                    else:
                        nil = completed
                    buffer.poll()
                    buffer.next_in_line = nil
                    continue
                if self.subscriptions.is_paused(nil.partition):
                    # kept, not drained: returned by a later poll if the partition is resumed by then
                    paused.append(nil)
                    buffer.next_in_line = None
                    continue
                try:
                    items, count = self._fetch_from(nil, remaining, take)
                except KafkaError as e:
                    if not fetched:
                        raise
                    nil.cached_exception = e  # raised by the next poll, after these records are returned
                    break
                if items:
                    fetched.setdefault(nil.partition, []).extend(items)
                    remaining -= count
                    self.subscriptions.move_partition_to_end(nil.partition)
                if nil.cached_exception is not None:
                    break
                if not items and not nil.is_consumed:
                    nil.drain()
        finally:
            for completed in paused:
                buffer.add(completed)
        return fetched

    def close(self) -> None:
        self.fetch_buffer.clear()
