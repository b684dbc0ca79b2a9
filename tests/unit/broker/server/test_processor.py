"""Processor and ConnectionQuotas without network I/O: a scripted selector (holding real KafkaChannels, whose
mute state machine the Processor drives) pins the one-in-flight invariant."""

from __future__ import annotations

import socket

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.network.connection_quotas import ConnectionQuotas, TooManyConnectionsError
from mini_broker.network.processor import READ_AHEAD_FRAMES_PER_ROUND, Processor, _Conn
from mini_broker.network.request_channel import (
    CloseConnectionResponse,
    EndThrottlingResponse,
    NoOpResponse,
    Request,
    RequestChannel,
    RequestContext,
    Response,
    SendResponse,
    StartThrottlingResponse,
)
from pykafka_client.network.transport.channel import ChannelMuteState, KafkaChannel
from pykafka_client.network.transport.selectable import ChannelState, DisconnectInfo, NetworkReceive, NetworkSend
from pykafka_client.network.transport.transport_layer import PlaintextTransportLayer
from pykafka_client.utils.time import MockTime


class ScriptedSelector:
    """Hands out the receives a test queues; records sends and closes. Its channels are real KafkaChannels
    (over a socketpair that carries nothing): mute/unmute go to their mute state machine as in the Selector."""

    def __init__(self) -> None:
        self.to_receive: list[NetworkReceive] = []
        self.to_disconnect: dict[str, DisconnectInfo] = {}
        self.sent: list[NetworkSend] = []
        #: whether a send goes out whole at once (the Selector's optimistic write), and those that did
        self.complete_at_once = False
        self.written_at_once: list[NetworkSend] = []
        self.channels: dict[str, KafkaChannel] = {}
        self._peers: list[socket.socket] = []
        self.closed: list[str] = []
        self._sends: list[NetworkSend] = []
        self._receives: list[NetworkReceive] = []
        self._disconnected: dict[str, DisconnectInfo] = {}
        #: frames a channel has "read ahead": handed out by read_buffered, not by poll
        self.read_ahead: dict[str, list[NetworkReceive]] = {}

    def register(self, connection_id: str, sock: socket.socket) -> None: ...

    def open_channel(self, connection_id: str) -> KafkaChannel:
        a, b = socket.socketpair()
        self._peers.append(b)
        channel = self.channels[connection_id] = KafkaChannel(connection_id, PlaintextTransportLayer(a))
        return channel

    @property
    def muted(self) -> set[str]:
        return {cid for cid, ch in self.channels.items() if ch.is_muted()}

    def channel(self, connection_id: str) -> KafkaChannel | None:
        return self.channels.get(connection_id)

    def send(self, send: NetworkSend) -> None:
        self.sent.append(send)

    def send_completing(self, send: NetworkSend) -> bool:
        """As the Selector's: True (and not reported by the next poll) when :attr:`complete_at_once`."""
        if self.complete_at_once:
            self.written_at_once.append(send)
            return True
        self.sent.append(send)
        return False

    def poll(self, timeout_ms: int) -> None:
        self._sends = list(self.sent)
        self.sent.clear()
        self._receives, self.to_receive = self.to_receive, []
        for cid, frames in self.read_ahead.items():  # a frame read ahead of an unmuted channel, as the Selector's
            channel = self.channels.get(cid)
            if frames and channel is not None and not channel.is_muted() and all(r.source != cid for r in self._receives):
                self._receives.append(frames.pop(0))
        self._disconnected, self.to_disconnect = self.to_disconnect, {}

    def completed_sends(self) -> list[NetworkSend]:
        return self._sends

    def completed_receives(self) -> list[NetworkReceive]:
        return self._receives

    def disconnected(self) -> dict[str, DisconnectInfo]:
        return self._disconnected

    def mute(self, connection_id: str) -> None:
        self.channels[connection_id].mute()

    def unmute(self, connection_id: str) -> None:
        self.channels[connection_id].maybe_unmute()

    def mute_channel(self, channel: KafkaChannel, request_received: bool = False) -> None:
        if request_received:
            channel.request_received()
        else:
            channel.mute()

    def unmute_channel(self, channel: KafkaChannel, response_sent: bool = False) -> bool:
        return channel.response_sent() if response_sent else channel.maybe_unmute()

    def open_channels(self) -> dict[str, KafkaChannel]:
        return self.channels

    def compiled_server_path(self) -> None:
        """None: the Processor takes this selector's own steps."""
        return None

    def read_buffered(self, channel: KafkaChannel) -> bool:
        """As the Selector's: the frames queued in :attr:`read_ahead` for the channel join the completed receives."""
        frames = self.read_ahead.get(channel.id)
        if not frames or channel.is_muted():
            return False
        self._receives.append(frames.pop(0))  # one frame a read, as the Selector's (one receive a poll)
        return True

    def close_channel(self, connection_id: str) -> None:
        self.closed.append(connection_id)
        channel = self.channels.pop(connection_id, None)
        if channel is not None:
            channel.close()

    def lowest_priority_channel(self) -> KafkaChannel | None:
        """As the Selector's with no idle order: the first channel opened."""
        return next(iter(self.channels.values()), None)

    def wakeup(self) -> None: ...

    def close(self) -> None:
        for cid in list(self.channels):
            self.close_channel(cid)
        for peer in self._peers:
            peer.close()


class Parser:
    def handles_inline(self, request: Request) -> bool:
        return False

    def handle(self, request: Request) -> None:
        raise AssertionError("no API is handled inline")

    def parse_request(self, processor_id: int, connection_id: str, client_address: str, listener_name: str,
                      payload: memoryview, start_time_ns: int) -> Request:
        if bytes(payload) == b"bad":
            raise ValueError("bad request")
        ctx = RequestContext(0, 0, 0, None, connection_id, client_address, listener_name)
        return Request(processor_id, ctx, bytes(payload), len(payload), start_time_ns)

    def complete_response_metrics(self, response: Response, now_ns: int) -> None: ...

    def response_metrics_parts(self) -> None:
        return None


def mute_state_of(channel: KafkaChannel) -> ChannelMuteState:
    """The channel's mute state, read afresh (each round may move it)."""
    return channel.mute_state


def make() -> tuple[Processor, ScriptedSelector, RequestChannel, ConnectionQuotas]:
    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    channel = RequestChannel(10)
    quotas = ConnectionQuotas(10)
    sel = ScriptedSelector()
    proc = Processor(0, config.listeners[0], config, channel, quotas, Parser(), sel, MockTime())
    channel.add_processor(0, proc)
    quotas.inc("1.2.3.4")
    proc._conns["c1"] = _Conn("c1", "1.2.3.4", "1.2.3.4:5")  # as if accepted and registered
    sel.open_channel("c1")
    return proc, sel, channel, quotas


def step(proc: Processor) -> None:
    proc._process_new_responses()
    proc._poll()
    proc._process_completed_receives()
    proc._process_completed_sends()
    proc._process_disconnected()


def rcv(data: bytes) -> NetworkReceive:
    return NetworkReceive("c1", memoryview(data))


def take(channel: RequestChannel) -> Request:
    r = channel.receive_request(0)
    assert isinstance(r, Request)
    return r


def respond(channel: RequestChannel, req: Request, data: bytes) -> None:
    channel.send_response(SendResponse(req, [data], len(data)))


def test_one_request_in_flight_and_order_kept() -> None:
    proc, sel, channel, _ = make()
    sel.to_receive = [rcv(b"a"), rcv(b"b"), rcv(b"c")]  # a transport that hands out several frames at once
    step(proc)
    a = take(channel)
    assert a.body == b"a" and "c1" in sel.muted
    assert channel.receive_request(0) is None  # b and c wait: one request in flight
    respond(channel, a, b"A")
    step(proc)  # response written
    assert [s.buffers for s in sel._sends] == [[b"A"]]
    step(proc)
    b = take(channel)
    assert b.body == b"b" and "c1" in sel.muted
    channel.send_response(NoOpResponse(b))  # acks=0: unmute without writing
    step(proc)
    step(proc)
    c = take(channel)
    assert c.body == b"c"
    respond(channel, c, b"C")
    step(proc)
    step(proc)
    assert "c1" not in sel.muted and channel.receive_request(0) is None


def test_processor_drives_the_channel_mute_state_machine() -> None:
    proc, sel, channel, _ = make()
    ch = sel.channels["c1"]
    assert ch.mute_state is ChannelMuteState.NOT_MUTED
    sel.to_receive = [rcv(b"a")]
    step(proc)
    assert mute_state_of(ch) is ChannelMuteState.MUTED_AND_RESPONSE_PENDING  # muted, then REQUEST_RECEIVED
    respond(channel, take(channel), b"A")
    proc._process_new_responses()
    assert mute_state_of(ch) is ChannelMuteState.MUTED_AND_RESPONSE_PENDING  # queued for writing, not yet sent
    step(proc)  # the send completes: RESPONSE_SENT, then unmute from plain MUTED
    assert mute_state_of(ch) is ChannelMuteState.NOT_MUTED


def test_no_op_response_is_a_response_sent_event() -> None:
    proc, sel, channel, _ = make()
    sel.to_receive = [rcv(b"a")]
    step(proc)
    channel.send_response(NoOpResponse(take(channel)))
    proc._process_new_responses()
    assert sel.channels["c1"].mute_state is ChannelMuteState.NOT_MUTED


def _throttle_scenario(no_op: bool, throttle_ends_first: bool) -> tuple[ScriptedSelector, RequestChannel, Processor]:
    """A request whose channel a quota throttles (StartThrottling before its response, as KafkaApis queues
    them), answered by a SendResponse or a NoOpResponse; the throttle ends before or after the answer."""
    proc, sel, channel, _ = make()
    sel.to_receive = [rcv(b"a"), rcv(b"b")]
    step(proc)
    a = take(channel)
    channel.send_response(StartThrottlingResponse(a))
    if throttle_ends_first:
        channel.send_response(EndThrottlingResponse(a))
    channel.send_response(NoOpResponse(a) if no_op else SendResponse(a, [b"A"], 1))
    step(proc)
    step(proc)
    return sel, channel, proc


@pytest.mark.parametrize("no_op", [False, True], ids=["send", "no_op"])
def test_response_with_throttled_channel_where_throttling_in_progress(no_op: bool) -> None:
    """Kafka testSendActionResponseWithThrottledChannelWhereThrottlingInProgress / testNoOpAction...: the
    answer is out, but the channel stays muted until the throttle ends; then the pipelined request goes on."""
    sel, channel, proc = _throttle_scenario(no_op, throttle_ends_first=False)
    ch = sel.channels["c1"]
    assert ch.mute_state is ChannelMuteState.MUTED_AND_THROTTLED and "c1" in sel.muted
    assert channel.receive_request(0) is None  # b still waits
    a = Request(0, RequestContext(0, 0, 0, None, "c1", "", ""), b"a", 1, 0)
    channel.send_response(EndThrottlingResponse(a))
    step(proc)
    step(proc)
    assert take(channel).body == b"b"


@pytest.mark.parametrize("no_op", [False, True], ids=["send", "no_op"])
def test_response_with_throttled_channel_where_throttling_already_done(no_op: bool) -> None:
    """Kafka testSendActionResponseWithThrottledChannelWhereThrottlingAlreadyDone / testNoOpAction...: the
    throttle ended while the response was pending, so the answer unmutes the channel."""
    sel, channel, _ = _throttle_scenario(no_op, throttle_ends_first=True)
    assert take(channel).body == b"b"  # unmuted after the answer; b was handed over and muted it again
    assert sel.channels["c1"].mute_state is ChannelMuteState.MUTED_AND_RESPONSE_PENDING


def test_end_throttling_for_a_closed_connection_is_ignored() -> None:
    proc, sel, channel, _ = make()
    sel.to_receive = [rcv(b"a")]
    step(proc)
    a = take(channel)
    channel.send_response(StartThrottlingResponse(a))
    sel.to_disconnect = {"c1": DisconnectInfo(ChannelState.EXPIRED)}
    step(proc)
    channel.send_response(EndThrottlingResponse(a))
    step(proc)
    assert proc.connection_count() == 0


def test_bad_request_and_close_response_close_only_that_connection() -> None:
    proc, sel, _, quotas = make()
    sel.to_receive = [rcv(b"bad")]
    step(proc)
    assert sel.closed == ["c1"] and quotas.get("1.2.3.4") == 0
    proc2, sel2, channel2, quotas2 = make()
    sel2.to_receive = [rcv(b"x")]
    step(proc2)
    channel2.send_response(CloseConnectionResponse(take(channel2)))
    step(proc2)
    assert sel2.closed == ["c1"] and quotas2.get("1.2.3.4") == 0


def test_disconnect_drops_the_in_flight_response() -> None:
    proc, sel, channel, quotas = make()
    sel.to_receive = [rcv(b"x")]
    step(proc)
    req = take(channel)
    sel.to_disconnect = {"c1": DisconnectInfo(ChannelState.EXPIRED)}
    step(proc)
    assert quotas.get("1.2.3.4") == 0
    respond(channel, req, b"late")
    step(proc)
    assert sel._sends == []  # nothing written to a closed connection


def test_connection_quotas_per_ip_and_overrides() -> None:
    q = ConnectionQuotas(0, {"10.0.0.1": 5})
    for _ in range(5):
        q.inc("10.0.0.1")
    with pytest.raises(TooManyConnectionsError):
        q.inc("10.0.0.1")
    with pytest.raises(TooManyConnectionsError):
        q.inc("10.0.0.2")
    q.dec("10.0.0.1")
    q.inc("10.0.0.1")
    assert q.get("10.0.0.1") == 5 and q.total == 5


def test_broker_wide_limit_blocks_then_times_out() -> None:
    q = ConnectionQuotas(100, max_connections=1)
    q.inc("a")
    with pytest.raises(TooManyConnectionsError):
        q.inc("b", timeout_s=0.01)
    q.dec("a")
    q.inc("b", timeout_s=0.01)


def test_connection_gone_before_registration_gives_its_quota_back() -> None:
    proc, _, _, quotas = make()
    quotas.inc("9.9.9.9")
    dead = socket.socket()
    dead.close()  # getsockname/getpeername now fail
    assert proc.accept(dead, may_block=False, remote_ip="9.9.9.9")
    proc._configure_new_connections()
    assert quotas.get("9.9.9.9") == 0 and proc.connection_count() == 1  # only the fixture's c1


def test_response_written_whole_at_once_unmutes_in_the_same_round() -> None:
    """A response the selector's optimistic write sends whole is complete at once: its metrics, its callback and
    RESPONSE_SENT (the unmute) come in that round, and the next pipelined request is read without another poll."""
    proc, sel, channel, _ = make()
    sel.complete_at_once = True
    completed: list[Response] = []
    callbacks: list[str] = []
    proc._parser.complete_response_metrics = lambda response, now_ns: completed.append(response)  # type: ignore[method-assign]
    sel.to_receive = [rcv(b"a"), rcv(b"b")]
    step(proc)
    a = take(channel)
    channel.send_response(SendResponse(a, [b"A"], 1, on_complete=lambda: callbacks.append("a")))
    proc._process_new_responses()
    assert [s.buffers for s in sel.written_at_once] == [[b"A"]] and sel.sent == []
    assert [r.request for r in completed] == [a] and callbacks == ["a"]
    assert sel.channels["c1"].mute_state is ChannelMuteState.NOT_MUTED and proc._inflight == {}
    proc._process_completed_receives()  # the waiting frame, with no poll in between
    assert take(channel).body == b"b"


def test_response_written_whole_at_once_to_a_throttled_channel_keeps_it_muted() -> None:
    proc, sel, channel, _ = make()
    sel.complete_at_once = True
    sel.to_receive = [rcv(b"a"), rcv(b"b")]
    step(proc)
    a = take(channel)
    channel.send_response(StartThrottlingResponse(a))
    channel.send_response(SendResponse(a, [b"A"], 1))
    step(proc)
    assert sel.channels["c1"].mute_state is ChannelMuteState.MUTED_AND_THROTTLED
    assert channel.receive_request(0) is None
    channel.send_response(EndThrottlingResponse(a))
    step(proc)
    step(proc)
    assert take(channel).body == b"b"


def test_a_send_response_is_the_send_the_selector_writes() -> None:
    """One object per response: the SendResponse goes to the selector as its NetworkSend, addressed to the request's
    connection, and its completion (reported by a poll) is matched back to it."""
    proc, sel, channel, _ = make()
    sel.to_receive = [rcv(b"a")]
    step(proc)
    a = take(channel)
    response = SendResponse(a, [b"A"], 1)
    assert isinstance(response, NetworkSend) and response.destination == "c1" and response.written == 0
    channel.send_response(response)
    proc._process_new_responses()
    assert sel.sent == [response]
    step(proc)  # the poll reports it complete: RESPONSE_SENT, unmuted
    assert sel.channels["c1"].mute_state is ChannelMuteState.NOT_MUTED and proc._inflight == {}


def test_only_sasl_listeners_processors_keep_delayed_authentication_failures() -> None:
    """connection.failed.authentication.delay.ms delays SASL failures only: a plaintext listener's processors have no
    queue of them to look at each round."""
    from mini_broker.network.socket_server import SocketServer

    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "num.network.threads": "1"})
    server = SocketServer(config, RequestChannel(10), Parser())
    try:
        assert [p._auth_failures for p in server.processors] == [None]
    finally:
        for acceptor in server.acceptors:
            acceptor.server_socket.close()
        for processor in server.processors:
            processor.join()


def test_responses_queued_while_responses_are_processed_go_out_in_the_same_pass() -> None:
    """The response queue is drained to its end, in order, those queued meanwhile included (Kafka's
    processNewResponses)."""
    proc, sel, channel, quotas = make()
    quotas.inc("1.2.3.4")
    proc._conns["c2"] = _Conn("c2", "1.2.3.4", "1.2.3.4:6")
    sel.open_channel("c2")
    sel.complete_at_once = True
    sel.to_receive = [rcv(b"a"), NetworkReceive("c2", memoryview(b"b"))]
    step(proc)
    a, b = take(channel), take(channel)
    channel.send_response(SendResponse(a, [b"A"], 1, on_complete=lambda: respond(channel, b, b"B")))
    proc._process_new_responses()
    assert [s.buffers for s in sel.written_at_once] == [[b"A"], [b"B"]] and not proc._response_queue
    assert sel.muted == set()


class _CountingWakeups(ScriptedSelector):
    """Counts wake-ups; its poll's wait runs :attr:`during_wait` (what another thread does meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.wakeups = 0
        self.during_wait: list[object] = []
        self.timeouts: list[int] = []

    def wakeup(self) -> None:
        self.wakeups += 1

    def poll(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)
        for fn in self.during_wait:
            assert callable(fn)
            fn()
        self.during_wait = []
        super().poll(timeout_ms)


def _make_counting() -> tuple[Processor, _CountingWakeups, RequestChannel]:
    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    channel = RequestChannel(10)
    sel = _CountingWakeups()
    proc = Processor(0, config.listeners[0], config, channel, ConnectionQuotas(10), Parser(), sel, MockTime())
    channel.add_processor(0, proc)
    proc._conns["c1"] = _Conn("c1", "1.2.3.4", "1.2.3.4:5")
    sel.open_channel("c1")
    return proc, sel, channel


def test_a_response_is_woken_for_only_while_the_processor_waits() -> None:
    """A response handed over while the processor runs its round needs no wake-up write (it looks at the queue
    before its next wait: the next poll does not wait); one handed over during the wait wakes it."""
    proc, sel, channel = _make_counting()
    sel.to_receive = [rcv(b"a"), rcv(b"b")]
    step(proc)
    a = take(channel)
    respond(channel, a, b"A")  # during the round (after its look at the queue): no wake-up, the next poll does not wait
    assert sel.wakeups == 0 and list(proc._response_queue)
    proc._poll()
    assert sel.timeouts[-1] == 0 and sel.wakeups == 0
    step(proc)
    assert [s.buffers for s in sel._sends] == [[b"A"]]
    step(proc)
    b = take(channel)
    sel.during_wait = [lambda: respond(channel, b, b"B")]  # handed over during the wait: woken
    proc._poll()
    assert sel.wakeups == 1
    step(proc)
    assert [s.buffers for s in sel._sends] == [[b"B"]] and sel.wakeups == 1


def test_a_response_from_another_thread_during_the_wait_wakes_it() -> None:
    import threading

    proc, sel, channel = _make_counting()
    sel.to_receive = [rcv(b"a")]
    step(proc)
    a = take(channel)
    def respond_from_another_thread() -> None:
        t = threading.Thread(target=respond, args=(channel, a, b"A"))
        t.start()
        t.join()

    sel.during_wait = [respond_from_another_thread]
    proc._poll()
    assert sel.wakeups == 1 and not proc._in_wait


class InlineParser(Parser):
    """Handles every request on the network thread, answering it with its body upper-cased."""

    def __init__(self, channel: RequestChannel) -> None:
        self.channel = channel
        self.handled: list[bytes] = []

    def handles_inline(self, request: Request) -> bool:
        return True

    def handle(self, request: Request) -> None:
        assert isinstance(request.body, bytes)
        self.handled.append(request.body)
        respond(self.channel, request, request.body.upper())


def _make_inline() -> tuple[Processor, ScriptedSelector, InlineParser]:
    proc, sel, channel, _ = make()
    parser = proc._parser = InlineParser(channel)
    sel.complete_at_once = True
    return proc, sel, parser


def test_frames_read_ahead_after_an_inline_answer_are_handled_in_the_same_round() -> None:
    """An inline-handled request's answer goes out at once and unmutes the connection; the frames read ahead after
    it are then handled in the same round, in order, one in flight at a time (each answered before the next is
    read), without another poll."""
    proc, sel, parser = _make_inline()
    polls = 0
    poll = sel.poll

    def counting_poll(timeout_ms: int) -> None:
        nonlocal polls
        polls += 1
        poll(timeout_ms)

    sel.poll = counting_poll  # type: ignore[method-assign]
    sel.to_receive = [rcv(b"a")]
    sel.read_ahead["c1"] = [rcv(b"b"), rcv(b"c")]
    step(proc)
    assert polls == 1 and parser.handled == [b"a", b"b", b"c"]
    assert [s.buffers for s in sel.written_at_once] == [[b"A"], [b"B"], [b"C"]]
    assert sel.channels["c1"].mute_state is ChannelMuteState.NOT_MUTED and proc.read_ahead_budget == 0


def test_frames_read_ahead_in_a_round_are_bounded() -> None:
    """At most READ_AHEAD_FRAMES_PER_ROUND frames read ahead are handled in a round (the other connections' I/O
    waits for the next poll meanwhile); the rest wait for the next rounds."""
    proc, sel, parser = _make_inline()
    frames = [bytes([0x61 + i]) for i in range(READ_AHEAD_FRAMES_PER_ROUND + 3)]
    sel.to_receive = [rcv(b"0")]
    sel.read_ahead["c1"] = [rcv(f) for f in frames]
    step(proc)
    assert parser.handled == [b"0", *frames[:READ_AHEAD_FRAMES_PER_ROUND]]
    step(proc)  # the next poll hands out the next frame read ahead, then the rest in that round
    assert parser.handled == [b"0", *frames]


def test_no_frame_is_read_ahead_while_the_answer_is_not_out() -> None:
    """An answer the optimistic write did not finish keeps the connection muted: nothing is read ahead until its
    send completes (one request in flight), nor outside the pass over the completed receives."""
    proc, sel, parser = _make_inline()
    sel.complete_at_once = False
    sel.to_receive = [rcv(b"a")]
    sel.read_ahead["c1"] = [rcv(b"b")]
    step(proc)
    assert parser.handled == [b"a"] and sel.read_ahead["c1"] != []
    step(proc)  # the send completes in this round's poll: unmuted after the pass over the receives
    assert parser.handled == [b"a"] and sel.channels["c1"].mute_state is ChannelMuteState.NOT_MUTED
    step(proc)  # the next poll hands it out
    assert parser.handled == [b"a", b"b"]
