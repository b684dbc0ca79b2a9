"""RequestChannel: bounded request queue, callbacks first, responses routed to the owning processor."""

from __future__ import annotations

import queue

import pytest

from mini_broker.network.request_channel import (
    CallbackRequest,
    NoOpResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    ShutdownRequest,
)


def req(processor_id: int = 0, cid: str = "c") -> Request:
    return Request(processor_id, RequestContext(18, 0, 1, None, cid, "127.0.0.1:1", "PLAINTEXT"), None, 0, 0)


class Sink:
    def __init__(self) -> None:
        self.responses: list[Response] = []

    def enqueue_response(self, response: Response) -> None:
        self.responses.append(response)


def test_queue_is_bounded() -> None:
    ch = RequestChannel(2)
    ch.send_request(req())
    ch.send_request(req())
    with pytest.raises(queue.Full):
        ch.send_request(req(), timeout=0.01)
    assert ch.request_queue_size() == 2


def test_callbacks_come_before_requests() -> None:
    ch = RequestChannel(5)
    r = req()
    ch.send_request(r)
    ran: list[int] = []
    cb = CallbackRequest(lambda: ran.append(1), r)
    ch.send_callback_request(cb)
    assert ch.receive_request(0) is cb
    assert ch.receive_request(0) is r
    got = ch.receive_request(0)  # the wakeup marker finds the callback queue empty
    assert got is None
    assert ch.receive_request(0) is None


def test_responses_go_to_the_owning_processor() -> None:
    ch = RequestChannel(5)
    a, b = Sink(), Sink()
    ch.add_processor(0, a)
    ch.add_processor(1, b)
    ch.send_response(NoOpResponse(req(1)))
    assert not a.responses and len(b.responses) == 1
    ch.remove_processor(1)
    ch.send_response(NoOpResponse(req(1)))  # dropped: processor gone
    assert len(b.responses) == 1
    with pytest.raises(ValueError):
        ch.add_processor(0, a)


def test_shutdown_request() -> None:
    ch = RequestChannel(1)
    ch.send_shutdown_request()
    assert isinstance(ch.receive_request(0), ShutdownRequest)
