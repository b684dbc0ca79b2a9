"""Incremental fetch sessions, client side (KIP-227; Java: FetchSessionHandler).

One handler per broker. The first request is a full fetch with session id 0 and epoch 0 (INITIAL):
the broker may answer with a new session id. Later requests to that broker are incremental: they
carry only partitions that are new or whose fetch state changed (offset, leader epoch, max bytes) and
list the partitions to drop as ``forgotten``; the broker answers only for partitions with news.
Epochs count 1, 2, ... (wrapping to 1 after 2^31-1). Any error, a disconnect, or a session id error
(FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) closes the session: the next request is full
again. A broker that answers a full fetch with session id 0 (no session, e.g. mini_broker) keeps
getting full fetches. Not thread-safe: the fetcher sends at most one request per broker at a time and
calls ``build`` / ``handle_response`` / ``handle_error`` under its own lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykafka_client.structs import TopicPartition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PartitionFetchState:
    """What a fetch request says about one partition."""

    fetch_offset: int
    current_leader_epoch: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class FetchSessionRequest:
    """One built request: the partitions to send, those to forget, and the session fields."""

    session_id: int
    epoch: int
    to_send: dict[TopicPartition, PartitionFetchState]
    to_forget: list[TopicPartition]
    #: every partition the broker will fetch in this request (sent or cached in the session)
    session_partitions: dict[TopicPartition, PartitionFetchState]

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.session_id = INVALID_SESSION_ID
        self.next_epoch = INITIAL_EPOCH
        #: the partitions (and states) the broker holds in the session after the last success
        self.session_partitions: dict[TopicPartition, PartitionFetchState] = {}

    def build(self, wanted: Mapping[TopicPartition, PartitionFetchState]) -> FetchSessionRequest:
        wanted = dict(wanted)
        if self.session_id == INVALID_SESSION_ID or self.next_epoch == INITIAL_EPOCH:
            return FetchSessionRequest(INVALID_SESSION_ID, INITIAL_EPOCH, wanted, [], wanted)
        to_send = {tp: st for tp, st in wanted.items() if self.session_partitions.get(tp) != st}
        to_forget = [tp for tp in self.session_partitions if tp not in wanted]
        return FetchSessionRequest(self.session_id, self.next_epoch, to_send, to_forget, wanted)

    def handle_response(self, request: FetchSessionRequest, error_code: int, session_id: int) -> bool:
        """Update the session from a response's top-level error and session id; False if the
        response must be ignored (the session was reset)."""
        if error_code != 0:
            self.handle_error()
            return False
        if request.is_full:
            if session_id == INVALID_SESSION_ID:
                self._reset()  # the broker keeps no session: full fetches again
            else:
                self.session_id = session_id
                self.next_epoch = 1
                self.session_partitions = dict(request.session_partitions)
            return True
        if session_id != self.session_id:
            self.handle_error()  # the broker closed or replaced the session
            return True
        self.session_partitions = dict(request.session_partitions)
        self.next_epoch = 1 if self.next_epoch >= _MAX_EPOCH else self.next_epoch + 1
        return True

    def handle_error(self) -> None:
        """A failed request (disconnect, timeout, session error): start over with a full fetch."""
        self._reset()

    def _reset(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.next_epoch = INITIAL_EPOCH
        self.session_partitions = {}
