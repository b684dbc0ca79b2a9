"""The Sender with the compiled kernel (batches encoded by ``encode_batch``, requests framed and responses decoded
in C) == the Sender on the pure-Python reference (``use_native(False)``, what ``PYKAFKA_NO_NATIVE=1`` runs): for
the same scripted appends and broker answers (success, a retriable error, MESSAGE_TOO_LARGE splits, duplicate
sequence numbers), the same produce requests carrying byte-identical record batches in the same order, and the
same outcome of every future. Idempotent and not, one or five requests in flight."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.unit.producer.helpers import native_switched, partitions_of
from tests.unit.producer.sender_harness import TOPIC, Harness, produce_response

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

NONE, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, DUPLICATE_SEQUENCE_NUMBER = 0, 6, 10, 46

_append = st.tuples(st.just("append"), st.integers(0, 1), st.integers(0, 3000), st.integers(1, 12))
_respond = st.tuples(st.just("respond"), st.sampled_from([NONE, NONE, NONE, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE,
                                                          DUPLICATE_SEQUENCE_NUMBER]), st.just(0), st.just(0))
_tick = st.tuples(st.just("tick"), st.integers(1, 300), st.just(0), st.just(0))


def _run(ops: list[tuple[str, int, int, int]], idempotent: bool, max_in_flight: int) -> tuple[list[Any], list[Any]]:
    h = Harness(idempotent=idempotent, max_in_flight=max_in_flight, batch_size=4096, retry_backoff_ms=50)
    futures = []
    offsets: dict[TopicPartition, int] = {}
    for kind, a, b, c in ops:
        if kind == "append":
            futures += h.append(TopicPartition(TOPIC, a), bytes([a + 1]) * b, c)
        elif kind == "tick":
            h.time.sleep(a)
        elif h.client.has_in_flight_request():
            h.respond_oldest(a, offsets)
        h.run_once()
    for _ in range(60):  # answer everything left with success
        h.time.sleep(100)
        h.run_once()
        while h.client.has_in_flight_request():
            body = h.client.pending()[0].body
            assert isinstance(body, ProduceRequest)
            h.client.respond(produce_response({tp: (NONE, 7) for tp in partitions_of(body)}))
            h.run_once()
    requests = [
        [(t.name, p.index, bytes(p.records)) for t in body.topic_data for p in t.partition_data]  # type: ignore[arg-type]
        for body in h.produce_requests()
    ]
    outcomes: list[object] = []
    for f in futures:
        if not f.done():
            outcomes.append("pending")
        elif f.exception(0) is not None:
            outcomes.append(type(f.exception(0)).__name__)
        else:
            md = f.result(0)
            outcomes.append((md.partition, md.offset, md.serialized_value_size))
    return requests, outcomes


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(st.one_of(_append, _append, _respond, _tick), min_size=1, max_size=25),
    idempotent=st.booleans(),
    max_in_flight=st.sampled_from([1, 5]),
)
def test_compiled_and_reference_senders_send_the_same_requests_and_outcomes(
    ops: list[tuple[str, int, int, int]], idempotent: bool, max_in_flight: int
) -> None:
    with native_switched(True):
        compiled = _run(ops, idempotent, max_in_flight)
    with native_switched(False):
        reference = _run(ops, idempotent, max_in_flight)
    assert compiled == reference
