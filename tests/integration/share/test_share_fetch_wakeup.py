"""A ShareFetch parked in the fetch purgatory (nothing to acquire) is answered as soon as records become acquirable
again: released by another member's acknowledgement, by its dropped connection, or by an expired lock (Kafka
checks its share fetch purgatory on each of these); and a dropped connection ends the share session it opened
(Kafka's ShareSessionCache disconnect listener), releasing what its member held. Raw sockets, as a client would
speak."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest
from tests.integration.share.helpers import create_share_topic, produce
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

#: the parked member's max wait; the release must answer it well before this
MAX_WAIT_MS = 10000
BOUND_S = MAX_WAIT_MS / 1000 / 2
RELEASE = 2


def _broker(**conf: Any) -> MiniBroker:
    conf.setdefault("share_auto_offset_reset", "earliest")
    conf.setdefault("group_share_record_lock_duration_ms", 60000)
    return MiniBroker(num_network_threads=1, num_io_threads=2, **conf)


def _topic_id(broker: MiniBroker, topic: str) -> uuid.UUID:
    assert broker.metadata_cache is not None
    md = broker.metadata_cache.get_topic(topic)
    assert md is not None
    return md.topic_id


def _fetch(c: Conn, group: str, member: str, epoch: int, topic_id: uuid.UUID, max_wait_ms: int = 0) -> Any:
    return c.call(ShareFetchRequest(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=100, batch_size=100, topics=[ShareFetchRequest.FetchTopic(
            topic_id=topic_id, partitions=[ShareFetchRequest.FetchPartition(partition_index=0)])]), 1)


def _acquired(response: Any) -> list[tuple[int, int, int]]:
    assert response.error_code == 0, response
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for t in response.responses for p in t.partitions for r in p.acquired_records]


class _Parked:
    """A member's ShareFetch with ``MAX_WAIT_MS`` sent on its own connection and a thread; ``answer()`` waits for
    the response and says how long after ``since`` it came."""

    def __init__(self, broker: MiniBroker, group: str, member: str, topic_id: uuid.UUID) -> None:
        self.conn = Conn(broker)
        self.out: list[tuple[Any, float]] = []
        assert broker.replica_manager is not None
        purgatory = broker.replica_manager.fetch_purgatory
        delayed_before = purgatory.num_delayed

        def run() -> None:
            response = _fetch(self.conn, group, member, 0, topic_id, max_wait_ms=MAX_WAIT_MS)
            self.out.append((response, time.monotonic()))

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while purgatory.num_delayed <= delayed_before:
            assert time.monotonic() < deadline, "the ShareFetch never parked in the fetch purgatory"
            time.sleep(0.01)

    def answer(self, since: float) -> tuple[Any, float]:
        self.thread.join(MAX_WAIT_MS / 1000 + 10)
        assert self.out, "the parked ShareFetch got no answer"
        response, at = self.out[0]
        self.conn.close()
        return response, at - since


def test_a_release_by_another_member_answers_a_parked_fetch_at_once() -> None:
    with _broker() as b, Conn(b) as c1:
        topic = create_share_topic(b)
        produce(b, topic, ["only"])
        topic_id = _topic_id(b, topic)
        assert _acquired(_fetch(c1, "sg-wake", "m1", 0, topic_id)) == [(0, 0, 1)]
        parked = _Parked(b, "sg-wake", "m2", topic_id)
        released_at = time.monotonic()
        acked = c1.call(ShareAcknowledgeRequest(group_id="sg-wake", member_id="m1", share_session_epoch=1, topics=[
            ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=topic_id, partitions=[
                ShareAcknowledgeRequest.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                    ShareAcknowledgeRequest.AcknowledgementBatch(0, 0, [RELEASE])])])]), 1)
        assert acked.error_code == 0 and acked.responses[0].partitions[0].error_code == 0
        response, waited = parked.answer(released_at)
        assert _acquired(response) == [(0, 0, 2)]
        assert waited < BOUND_S, f"the parked fetch was answered {waited:.2f}s after the release"


def test_an_expired_lock_answers_a_parked_fetch() -> None:
    with _broker(group_share_record_lock_duration_ms=1000) as b, Conn(b) as c1:
        topic = create_share_topic(b)
        produce(b, topic, ["only"])
        topic_id = _topic_id(b, topic)
        taken_at = time.monotonic()
        assert _acquired(_fetch(c1, "sg-expire", "m1", 0, topic_id)) == [(0, 0, 1)]
        parked = _Parked(b, "sg-expire", "m2", topic_id)
        response, waited = parked.answer(taken_at)
        assert _acquired(response) == [(0, 0, 2)]
        assert waited < BOUND_S, f"the parked fetch was answered {waited:.2f}s after the acquisition (lock: 1s)"


def test_a_dropped_connection_ends_its_share_session_and_releases_its_records() -> None:
    with _broker() as b:
        assert b.share_partitions is not None
        topic = create_share_topic(b)
        produce(b, topic, ["only"])
        topic_id = _topic_id(b, topic)
        dropped = Conn(b)
        assert _acquired(_fetch(dropped, "sg-drop", "m1", 0, topic_id)) == [(0, 0, 1)]
        assert b.share_partitions.session_count() == 1
        parked = _Parked(b, "sg-drop", "m2", topic_id)
        dropped_at = time.monotonic()
        dropped.close()  # no ShareAcknowledge, no final epoch: the socket just goes away
        response, waited = parked.answer(dropped_at)
        assert _acquired(response) == [(0, 0, 2)]
        assert waited < BOUND_S, f"the records of the dropped connection came back {waited:.2f}s after it closed"
        # m1's session is gone (m2's remains): a later request of m1 on a new connection must open a new one
        assert b.share_partitions.session_count() == 1
        with Conn(b) as again:
            assert _fetch(again, "sg-drop", "m1", 1, topic_id).error_code == 122  # SHARE_SESSION_NOT_FOUND
