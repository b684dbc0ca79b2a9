"""Incremental fetch sessions, KIP-227 (Kafka: ``kafka.server.FetchSession`` / ``FetchSessionCache``).

A client opens a session with a full fetch at epoch 0 and gets a session id; later fetches at epochs 1, 2, ...
name only the partitions whose fetch position changed (plus ``forgotten_topics_data`` to drop some), and the
response holds only partitions with something new: records, an error, or a high watermark / last stable
offset / log start offset different from what the session last reported.

Request cases (``FetchRequest`` v7+):

* session 0, epoch -1: sessionless full fetch (no session, response session id 0);
* epoch -1 with a session id: close that session, answer as sessionless;
* epoch 0: close the given session if any, open a new one from the request (id 0 when the cache has no room);
* epoch > 0: unknown id -> FETCH_SESSION_ID_NOT_FOUND; wrong epoch -> INVALID_FETCH_SESSION_EPOCH.

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions (0 disables sessions) and
evicts the least recently used one when full. Partitions that returned records move to the end of the
session's order so that every partition gets its turn under ``max_bytes``.
"""

from __future__ import annotations

import itertools
import random
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from pykafka_client.utils.time import SYSTEM_TIME, Time

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1

PartitionKey = tuple[str, int]  # (topic name or topic id as str, partition)


@dataclass
class CachedPartition:
    """One partition of a session: what the client asked for and what the session last reported."""

    topic: str | None
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    log_start_offset: int = -1
    current_leader_epoch: int = -1
    reported_high_watermark: int = -2
    reported_last_stable_offset: int = -2
    reported_log_start_offset: int = -2

    def must_report(self, error_code: int, records_size: int, hw: int, lso: int, log_start: int) -> bool:
        """Whether an incremental response includes this partition; updates what was reported."""
        changed = (error_code != 0 or records_size > 0 or hw != self.reported_high_watermark
                   or lso != self.reported_last_stable_offset or log_start != self.reported_log_start_offset)
        if changed:
            self.reported_high_watermark = hw
            self.reported_last_stable_offset = lso
            self.reported_log_start_offset = log_start
        return changed


class FetchSession:
    """The partitions of one session in fetch order, its next expected epoch, and a lock."""

    def __init__(self, session_id: int, uses_topic_ids: bool, now_ms: int) -> None:
        self.id = session_id
        self.epoch = INITIAL_EPOCH + 1  # the epoch the next request must carry
        self.uses_topic_ids = uses_topic_ids
        self.partitions: OrderedDict[PartitionKey, CachedPartition] = OrderedDict()
        self.last_used_ms = now_ms
        self.lock = threading.Lock()

    @staticmethod
    def key(topic: str | None, topic_id: uuid.UUID, partition: int, uses_topic_ids: bool) -> PartitionKey:
        return (str(topic_id) if uses_topic_ids else (topic or ""), partition)

    def upsert(self, part: CachedPartition) -> None:
        key = self.key(part.topic, part.topic_id, part.partition, self.uses_topic_ids)
        existing = self.partitions.get(key)
        if existing is None:
            self.partitions[key] = part
        else:
            existing.fetch_offset = part.fetch_offset
            existing.max_bytes = part.max_bytes
            existing.log_start_offset = part.log_start_offset
            existing.current_leader_epoch = part.current_leader_epoch

    def forget(self, topic: str | None, topic_id: uuid.UUID, partition: int) -> None:
        self.partitions.pop(self.key(topic, topic_id, partition, self.uses_topic_ids), None)

    def move_to_end(self, part: CachedPartition) -> None:
        key = self.key(part.topic, part.topic_id, part.partition, self.uses_topic_ids)
        if key in self.partitions:
            self.partitions.move_to_end(key)


class FetchSessionCache:
    """At most ``max_entries`` sessions, least recently used evicted first. Thread-safe."""

    def __init__(self, max_entries: int, time: Time = SYSTEM_TIME) -> None:
        self.max_entries = max_entries
        self._time = time
        self._lock = threading.Lock()
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(random.randint(1, 2**30))

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def create(self, uses_topic_ids: bool) -> FetchSession | None:
        """A new session, or None when sessions are disabled."""
        if self.max_entries <= 0:
            return None
        with self._lock:
            while len(self._sessions) >= self.max_entries:
                self._sessions.popitem(last=False)
            session_id = next(self._ids) % (2**31 - 1) or next(self._ids)
            while session_id in self._sessions or session_id == INVALID_SESSION_ID:
                session_id = next(self._ids) % (2**31 - 1)
            session = FetchSession(session_id, uses_topic_ids, self._time.milliseconds())
            self._sessions[session_id] = session
            return session

    def get(self, session_id: int) -> FetchSession | None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                self._sessions.move_to_end(session_id)
                session.last_used_ms = self._time.milliseconds()
            return session

    def remove(self, session_id: int) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)
