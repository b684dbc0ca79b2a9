"""Incremental fetch sessions (KIP-227): the handler alone, and through the Fetcher."""

from __future__ import annotations

from typing import Any

import pytest

from pykafka_client.consumer.fetch_session_handler import FetchSessionHandler, PartitionFetchState
from pykafka_client.consumer.fetcher import FetchConfig, Fetcher
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.protocol.messages.fetch_request import FetchRequest
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import body_as
from tests.unit.consumer.helpers import ConsumerEnv, batch, metadata_with

pytestmark = pytest.mark.timeout(60)

TP0, TP1, TP2 = (TopicPartition("t", i) for i in range(3))


def st(offset: int) -> PartitionFetchState:
    return PartitionFetchState(offset, 0, 100)


def test_handler_full_then_incremental() -> None:
    h = FetchSessionHandler(0)
    r1 = h.build({TP0: st(0), TP1: st(0)})
    assert (r1.session_id, r1.epoch, set(r1.to_send), r1.to_forget, r1.is_full) == (0, 0, {TP0, TP1}, [], True)
    assert h.handle_response(r1, 0, 77)
    r2 = h.build({TP0: st(5), TP1: st(0)})
    assert (r2.session_id, r2.epoch, set(r2.to_send), r2.to_forget) == (77, 1, {TP0}, [])
    assert h.handle_response(r2, 0, 77)
    r3 = h.build({TP0: st(5), TP2: st(0)})
    assert (r3.epoch, set(r3.to_send), r3.to_forget) == (2, {TP2}, [TP1])


@pytest.mark.parametrize("error", [70, 71, 1])
def test_handler_error_goes_back_to_full(error: int) -> None:
    h = FetchSessionHandler(0)
    h.handle_response(h.build({TP0: st(0)}), 0, 9)
    r = h.build({TP0: st(1)})
    assert not h.handle_response(r, error, 0)
    again = h.build({TP0: st(1)})
    assert (again.session_id, again.epoch, again.is_full) == (0, 0, True)


def test_broker_without_sessions_keeps_full_fetches() -> None:
    h = FetchSessionHandler(0)
    for _ in range(3):
        r = h.build({TP0: st(0)})
        assert r.is_full and r.session_id == 0
        assert h.handle_response(r, 0, 0)


def test_epoch_wraps_to_one() -> None:
    h = FetchSessionHandler(0)
    h.handle_response(h.build({TP0: st(0)}), 0, 5)
    h.next_epoch = 2**31 - 1
    r = h.build({TP0: st(0)})
    h.handle_response(r, 0, 5)
    assert h.next_epoch == 1


def make() -> tuple[Fetcher, ConsumerEnv, SubscriptionState]:
    time = MockTime()
    env = ConsumerEnv(time, metadata_with({"t": 3}))
    subs = SubscriptionState()
    return Fetcher(env.cnc, env.metadata, subs, FetchConfig(), time), env, subs


def resp(session_id: int, parts: dict[TopicPartition, bytes], error: int = 0) -> FetchResponse:
    return FetchResponse(
        error_code=error,
        session_id=session_id,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponse.PartitionData(partition_index=tp.partition, high_watermark=10, records=r)
                    for tp, r in parts.items()
                ],
            )
        ]
        if parts
        else [],
    )


def sent_parts(body: Any) -> dict[int, int]:
    return {p.partition: p.fetch_offset for t in body.topics for p in t.partitions}


def test_fetcher_uses_incremental_sessions() -> None:
    f, env, subs = make()
    subs.assign_from_user([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    f.send_fetches()
    first = body_as(env.pending()[0], FetchRequest)
    assert (first.session_id, first.session_epoch, sent_parts(first)) == (0, 0, {0: 0, 1: 0})
    env.respond(resp(42, {TP0: batch(0, [b"a", b"b"])}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0, 1]
    f.send_fetches()
    second = body_as(env.pending()[0], FetchRequest)
    # only the partition whose position moved is sent; TP1 stays cached in the session
    assert (second.session_id, second.session_epoch, sent_parts(second)) == (42, 1, {0: 2})
    assert second.forgotten_topics_data == []
    # an incremental response naming only TP1 is matched with the session's offset for it
    env.respond(resp(42, {TP1: batch(0, [b"x"])}))
    assert [r.value for r in f.collect_fetch()[TP1]] == [b"x"]
    subs.assign_from_user([TP1])
    f.send_fetches()
    third = body_as(env.pending()[0], FetchRequest)
    assert third.session_epoch == 2 and sent_parts(third) == {1: 1}
    assert [(t.topic, t.partitions) for t in third.forgotten_topics_data] == [("t", [0])]


def test_fetcher_session_error_and_disconnect_restart_full() -> None:
    f, env, subs = make()
    subs.assign_from_user([TP0])
    subs.seek(TP0, 0)
    f.send_fetches()
    env.respond(resp(42, {}))
    f.send_fetches()
    env.respond(resp(0, {}, error=70))  # FETCH_SESSION_ID_NOT_FOUND
    f.send_fetches()
    body = body_as(env.pending()[0], FetchRequest)
    assert (body.session_id, body.session_epoch) == (0, 0)
    env.respond(resp(43, {}))
    f.send_fetches()
    assert body_as(env.pending()[0], FetchRequest).session_id == 43
    env.disconnect()
    f.send_fetches()
    body = body_as(env.pending()[0], FetchRequest)
    assert (body.session_id, body.session_epoch, sent_parts(body)) == (0, 0, {0: 0})
