"""InFlightRequests contract (statements 20-22)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.client_request import RequestHeaderInfo
from pykafka_client.network.in_flight_requests import InFlightRequest, InFlightRequests
from pykafka_client.network.transport.selectable import NetworkSend

_corr = iter(range(10**6))


def req(node: str = "1", *, sent_at: int = 0, timeout: int = 1000, expect_response: bool = True,
        completed: bool = True) -> InFlightRequest:
    send = NetworkSend(node, [b"\x00\x00\x00\x00"], 4)
    if completed:
        send.written = 4
    return InFlightRequest(
        RequestHeaderInfo(18, 0, "c", next(_corr)), timeout, sent_at, node, None, expect_response, False, None,
        send, sent_at,
    )


def test_s20_complete_next_takes_the_oldest() -> None:
    ifr = InFlightRequests(5)
    a, b, c = req(), req(), req()
    for r in (a, b, c):
        ifr.add(r)
    assert ifr.count("1") == 3 and ifr.count() == 3
    assert ifr.complete_next("1") is a
    assert ifr.complete_next("1") is b
    assert ifr.count() == 1


def test_s20_complete_last_sent_takes_the_newest() -> None:
    ifr = InFlightRequests(5)
    a, b = req(), req(expect_response=False)
    ifr.add(a)
    ifr.add(b)
    assert ifr.last_sent("1") is b
    assert ifr.complete_last_sent("1") is b
    assert ifr.oldest("1") is a and ifr.count() == 1


def test_s21_can_send_more_respects_max_and_incomplete_send() -> None:
    ifr = InFlightRequests(2)
    assert ifr.can_send_more("1")
    ifr.add(req(completed=False))
    assert not ifr.can_send_more("1")  # previous send not fully written
    ifr.last_sent("1").send.written = 4
    assert ifr.can_send_more("1")
    ifr.add(req())
    assert not ifr.can_send_more("1")  # max in flight reached
    assert ifr.can_send_more("2")


def test_s22_timed_out_nodes_strictly_after_timeout() -> None:
    ifr = InFlightRequests(5)
    ifr.add(req("1", sent_at=0, timeout=1000))
    ifr.add(req("2", sent_at=500, timeout=1000))
    assert ifr.nodes_with_timed_out_requests(1000) == []
    assert ifr.nodes_with_timed_out_requests(1001) == ["1"]
    assert sorted(ifr.nodes_with_timed_out_requests(1501)) == ["1", "2"]


def test_s22_per_request_timeout_and_throttle_time_excluded() -> None:
    ifr = InFlightRequests(5)
    ifr.add(req("1", sent_at=0, timeout=5000))
    ifr.add(req("1", sent_at=10, timeout=100))  # a newer request with a shorter timeout
    assert ifr.nodes_with_timed_out_requests(111) == ["1"]
    ifr2 = InFlightRequests(5)
    ifr2.add(req("1", sent_at=0, timeout=100))
    ifr2.increment_throttle_time("1", 300)
    assert ifr2.nodes_with_timed_out_requests(400) == []
    assert ifr2.nodes_with_timed_out_requests(401) == ["1"]


def test_clear_all_returns_oldest_first() -> None:
    ifr = InFlightRequests(5)
    a, b = req(), req()
    ifr.add(a)
    ifr.add(b)
    assert ifr.clear_all("1") == [a, b]
    assert ifr.count() == 0 and ifr.clear_all("1") == []


def test_take_oldest_and_put_back() -> None:
    ifr = InFlightRequests(5)
    assert ifr.take_oldest_or_none("1") is None
    a, b = req(), req()
    ifr.add(a)
    ifr.add(b)
    assert ifr.take_oldest_or_none("1") is a and ifr.count() == 1 and ifr.oldest("1") is b
    ifr.put_back_oldest(a)  # (a response that could not be decoded)
    assert ifr.count() == 2 and ifr.clear_all("1") == [a, b]
    ifr.put_back_oldest(a)  # onto a node with no queue left
    assert ifr.count("1") == 1 and ifr.oldest("1") is a


def test_no_timeout_until_is_the_earliest_deadline() -> None:
    """A poll reads ``no_timeout_until_ms`` instead of scanning: up to it no request can have timed out."""
    ifr = InFlightRequests(5)
    assert ifr.nodes_with_timed_out_requests(10**12) == [] and ifr.no_timeout_until_ms > 10**12
    ifr.add(req("1", sent_at=100, timeout=1000))
    ifr.add(req("2", sent_at=50, timeout=5000))
    assert ifr.no_timeout_until_ms == 1100
    ifr.complete_next("1")
    assert ifr.nodes_with_timed_out_requests(1101) == []  # a scan past the bound sets it anew
    assert ifr.no_timeout_until_ms == 5050
    ifr.add(req("1", sent_at=200, timeout=-1))  # a negative timeout: no bound, every poll scans
    assert ifr.no_timeout_until_ms < 0
    assert ifr.nodes_with_timed_out_requests(150) == ["1"]


def _reference_timed_out(requests: list[InFlightRequest], now_ms: int) -> set[str]:
    return {r.destination for r in requests if max(0, now_ms - r.send_time_ms) - r.throttle_time_ms > r.request_timeout_ms}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "next", "take", "throttle", "clear", "scan"]), st.sampled_from("12"),
                          st.integers(-50, 3000), st.integers(-5, 2000)), max_size=40))
def test_timed_out_nodes_match_a_full_scan(ops: list[tuple[str, str, int, int]]) -> None:
    """Whatever was added, answered, taken back, throttled or cleared, and whenever asked: the nodes with a timed-out
    request are those a scan of every request finds, and none is found at or before ``no_timeout_until_ms``."""
    ifr = InFlightRequests(100)
    now = 0
    for op, node, t, timeout in ops:
        now += max(t, 0) // 10
        if op == "add":
            ifr.add(req(node, sent_at=now + t % 7 - 3, timeout=timeout))
        elif op == "next" and ifr.count(node):
            ifr.complete_next(node)
        elif op == "take":
            taken = ifr.take_oldest_or_none(node)
            if taken is not None and t % 2:
                ifr.put_back_oldest(taken)
        elif op == "throttle":
            ifr.increment_throttle_time(node, abs(t))
        elif op == "clear":
            ifr.clear_all(node)
        at = now + t
        expected = _reference_timed_out(list(ifr), at)
        if at <= ifr.no_timeout_until_ms:
            assert expected == set()
        assert set(ifr.nodes_with_timed_out_requests(at)) == expected
