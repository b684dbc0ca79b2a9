"""The kernel's InFlightRequests against the reference (network.in_flight_requests.InFlightRequests): the same random
operation sequences give the same results, the same errors and the same state."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.client_request import RequestHeaderInfo
from pykafka_client.network.in_flight_requests import (
    InFlightRequest,
    InFlightRequests,
    InFlightRequestsApi,
    new_in_flight_requests,
)
from pykafka_client.network.transport.selectable import NetworkSend
from pykafka_client.protocol.records import _native

kernel = _native.loaded_kernel()
pytestmark = pytest.mark.skipif(kernel is None, reason="the kernel is not built")


def _request(n: int, node: str, sent_at: int, timeout: int, size: int, written: int) -> InFlightRequest:
    send = NetworkSend(node, [b"\x00" * size], size)
    send.written = written
    return InFlightRequest(
        RequestHeaderInfo(0, 9, "c", n), timeout, sent_at, node, None, True, False, None, send, sent_at,
    )


def _compiled(max_in_flight: int) -> InFlightRequestsApi:
    assert kernel is not None
    made: InFlightRequestsApi = kernel.InFlightRequests(max_in_flight, IllegalStateError)
    return made


_NODES = st.sampled_from(["1", "2", "3"])
_TIMES = st.integers(-(2**62), 2**62) | st.integers(-50, 5000)
_OPS = st.one_of(
    st.tuples(st.just("add"), _NODES, _TIMES, _TIMES, st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.sampled_from([
        "complete_next", "last_sent", "complete_last_sent", "oldest", "take_oldest_or_none", "newest_or_none",
        "can_send_more", "count", "is_empty", "clear_all",
    ]), _NODES),
    st.tuples(st.sampled_from(["count_all", "is_empty_all", "iter", "no_timeout_until_ms"])),
    st.tuples(st.just("put_back"), st.integers(0, 200)),
    st.tuples(st.just("throttle"), _NODES, st.integers(0, 3000)),
    st.tuples(st.just("write"), _NODES, st.integers(0, 3)),
    st.tuples(st.just("scan"), _TIMES),
)


def _outcome(f: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", f(*args)
    except IllegalStateError as e:
        return "IllegalStateError", str(e)
    except IndexError:  # (the reference's pop of an empty deque)
        return "empty", None


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 4), st.lists(_OPS, max_size=60))
def test_the_kernel_type_answers_as_the_reference(max_in_flight: int, ops: list[tuple[Any, ...]]) -> None:
    ref: InFlightRequestsApi = InFlightRequests(max_in_flight)
    nat = _compiled(max_in_flight)
    # each request twice, one per implementation (throttle time is added to the request objects): compared by number
    ref_reqs: list[InFlightRequest] = []
    nat_reqs: list[InFlightRequest] = []
    number: dict[int, int] = {}

    def same(r: Any) -> Any:
        if isinstance(r, InFlightRequest):
            return ("req", number[id(r)], r.throttle_time_ms, r.send.written)
        if isinstance(r, list):
            return [same(x) for x in r]
        return r

    for op in ops:
        name = op[0]
        if name == "add":
            _, node, sent_at, timeout, size, written = op
            for reqs, ifr in ((ref_reqs, ref), (nat_reqs, nat)):
                r = _request(len(reqs), node, sent_at, timeout, size, min(written, size))
                number[id(r)] = len(reqs)
                reqs.append(r)
                ifr.add(r)
        elif name == "put_back":
            if ref_reqs:
                i = op[1] % len(ref_reqs)
                ref.put_back_oldest(ref_reqs[i])
                nat.put_back_oldest(nat_reqs[i])
        elif name == "throttle":
            ref.increment_throttle_time(op[1], op[2])
            nat.increment_throttle_time(op[1], op[2])
        elif name == "write":  # bytes of a node's newest send go out
            for ifr in (ref, nat):
                newest = ifr.newest_or_none(op[1])
                if newest is not None:
                    newest.send.written = min(newest.send.size, newest.send.written + op[2])
        elif name == "scan":
            assert ref.nodes_with_timed_out_requests(op[1]) == nat.nodes_with_timed_out_requests(op[1])
        elif name == "count_all":
            assert ref.count() == nat.count()
        elif name == "is_empty_all":
            assert ref.is_empty() == nat.is_empty()
        elif name == "iter":
            assert same(list(ref)) == same(list(nat))
        elif name == "no_timeout_until_ms":
            assert ref.no_timeout_until_ms == nat.no_timeout_until_ms
        else:
            a, b = _outcome(getattr(ref, name), op[1]), _outcome(getattr(nat, name), op[1])
            assert (a[0], same(a[1])) == (b[0], same(b[1])), name
        assert ref.count() == nat.count() and ref.no_timeout_until_ms == nat.no_timeout_until_ms
        for node in ("1", "2", "3"):  # (after every step: what each node's next send is asked)
            assert ref.can_send_more(node) == nat.can_send_more(node), node
            assert ref.count(node) == nat.count(node) and ref.is_empty(node) == nat.is_empty(node), node
    assert same(list(ref)) == same(list(nat))


def test_the_kernel_type_checks_its_maximum_and_names_it() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        _compiled(0)
    assert _compiled(3).max_in_flight_requests_per_connection == 3
    with pytest.raises(IllegalStateError, match="no in-flight requests for node 7"):
        _compiled(3).complete_next("7")


def test_a_network_client_uses_the_kernel_type_when_the_kernel_is_on() -> None:
    previous = _native.use_native(True)
    try:
        assert kernel is not None and isinstance(new_in_flight_requests(5), kernel.InFlightRequests)  # type: ignore[arg-type]  # (a compiled type, declared a callable in Kernel)
        _native.use_native(False)
        assert isinstance(new_in_flight_requests(5), InFlightRequests)
    finally:
        _native.use_native(previous)
