"""CorrelationIds: unique 32-bit ids that skip the SASL range, also when threads draw them at once (statement 19)."""

from __future__ import annotations

import threading

import pytest

from pykafka_client.network.client_response import RequestHeaderInfo
from pykafka_client.network.correlation_ids import (
    SASL_MAX_RESERVED_CORRELATION_ID,
    SASL_MIN_RESERVED_CORRELATION_ID,
    CorrelationIds,
)


def test_ids_count_up_from_the_start() -> None:
    ids = CorrelationIds(5)
    assert [ids.next() for _ in range(3)] == [5, 6, 7]
    assert ids.next_id == 8
    assert ids.next() == 8  # reading next_id draws nothing


def test_the_reserved_range_is_skipped_by_wrapping_to_the_lowest_int() -> None:
    ids = CorrelationIds(SASL_MIN_RESERVED_CORRELATION_ID - 1)
    assert [ids.next() for _ in range(3)] == [SASL_MIN_RESERVED_CORRELATION_ID - 1, -(2**31), -(2**31) + 1]
    ids.next_id = SASL_MAX_RESERVED_CORRELATION_ID  # a start inside the range wraps too
    assert ids.next() == -(2**31)


def test_threads_drawing_across_the_wrap_get_unique_ids_outside_the_reserved_range() -> None:
    ids = CorrelationIds(SASL_MIN_RESERVED_CORRELATION_ID - 2000)
    per_thread = 1000
    drawn: list[list[int]] = [[] for _ in range(8)]
    start = threading.Barrier(len(drawn))

    def draw(out: list[int]) -> None:
        start.wait()
        for _ in range(per_thread):
            out.append(ids.next())

    threads = [threading.Thread(target=draw, args=(out,)) for out in drawn]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [cid for out in drawn for cid in out]
    assert len(set(every)) == len(every) == 8 * per_thread
    assert not any(SASL_MIN_RESERVED_CORRELATION_ID <= cid <= SASL_MAX_RESERVED_CORRELATION_ID for cid in every)
    # exactly the 2000 ids below the range, then the lowest ints on from -2**31 without a gap
    assert sorted(every) == list(range(-(2**31), -(2**31) + 6000)) + list(
        range(SASL_MIN_RESERVED_CORRELATION_ID - 2000, SASL_MIN_RESERVED_CORRELATION_ID)
    )


def test_a_request_header_is_an_immutable_value() -> None:
    header = RequestHeaderInfo(0, 9, "client", 7)
    assert (header.api_key, header.api_version, header.client_id, header.correlation_id) == (0, 9, "client", 7)
    assert header == RequestHeaderInfo(0, 9, "client", 7) and hash(header) == hash(RequestHeaderInfo(0, 9, "client", 7))
    assert repr(header) == "RequestHeaderInfo(api_key=0, api_version=9, client_id='client', correlation_id=7)"
    with pytest.raises(AttributeError):
        header.correlation_id = 8  # type: ignore[misc]


def test_next_or_none_draws_from_the_same_counter_and_stops_before_the_reserved_range() -> None:
    ids = CorrelationIds(SASL_MIN_RESERVED_CORRELATION_ID - 3)
    assert ids.next_or_none() == SASL_MIN_RESERVED_CORRELATION_ID - 3
    assert ids.next() == SASL_MIN_RESERVED_CORRELATION_ID - 2
    assert ids.next_or_none() == SASL_MIN_RESERVED_CORRELATION_ID - 1
    assert ids.next_or_none() is None  # the reserved range: next() wraps
    assert ids.next_id == SASL_MIN_RESERVED_CORRELATION_ID  # (the counter's next; next() wraps it)
    assert ids.next() == -(2**31)
    assert ids.next_or_none() == -(2**31) + 1
    ids.next_id = 7
    assert [ids.next_or_none(), ids.next(), ids.next_id, ids.next()] == [7, 8, 9, 9]
