"""InFlightRequests contract (statements 20-22)."""

from __future__ import annotations

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
