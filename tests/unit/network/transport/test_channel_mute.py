"""The broker's channel mute state machine (KafkaChannel.ChannelMuteState)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from pykafka_client.errors import IllegalStateError
from pykafka_client.network.transport.channel import (
    EVENT_READ,
    EVENT_WRITE,
    ChannelMuteEvent,
    ChannelMuteState,
    KafkaChannel,
    next_mute_state,
)
from pykafka_client.network.transport.network_send import size_prefixed
from pykafka_client.network.transport.transport_layer import PlaintextTransportLayer

S = ChannelMuteState
E = ChannelMuteEvent

VALID = {
    (S.MUTED, E.REQUEST_RECEIVED): S.MUTED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.RESPONSE_SENT): S.MUTED_AND_THROTTLED,
    (S.MUTED_AND_RESPONSE_PENDING, E.THROTTLE_STARTED): S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING,
    (S.MUTED_AND_THROTTLED, E.THROTTLE_ENDED): S.MUTED,
    (S.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING, E.THROTTLE_ENDED): S.MUTED_AND_RESPONSE_PENDING,
}


@pytest.mark.parametrize(("state", "event"), [(s, e) for s in S for e in E])
def test_every_state_event_pair(state: ChannelMuteState, event: ChannelMuteEvent) -> None:
    if (state, event) in VALID:
        assert next_mute_state(state, event) is VALID[(state, event)]
    else:
        with pytest.raises(IllegalStateError, match=f"Cannot transition from {state.value} for {event.value}"):
            next_mute_state(state, event)


@pytest.fixture
def channel() -> Iterator[KafkaChannel]:
    a, b = socket.socketpair()
    a.setblocking(False)
    ch = KafkaChannel("c1", PlaintextTransportLayer(a))
    yield ch
    ch.close()
    b.close()


def test_new_server_channel_is_ready_and_reads(channel: KafkaChannel) -> None:
    assert channel.ready() and channel.mute_state is S.NOT_MUTED
    assert channel.interest() == EVENT_READ


def test_mute_stops_reading_but_keeps_writing(channel: KafkaChannel) -> None:
    channel.mute()
    assert channel.is_muted() and channel.interest() == 0
    channel.set_send(size_prefixed("c1", [b"x"]))
    assert channel.interest() == EVENT_WRITE


def test_full_request_response_cycle(channel: KafkaChannel) -> None:
    channel.mute()
    channel.handle_channel_mute_event(E.REQUEST_RECEIVED)
    assert not channel.maybe_unmute()  # response pending: stays muted
    assert channel.mute_state is S.MUTED_AND_RESPONSE_PENDING
    channel.handle_channel_mute_event(E.RESPONSE_SENT)
    assert channel.maybe_unmute()
    assert not channel.is_muted()


def test_throttled_channel_unmutes_only_after_throttle_ends(channel: KafkaChannel) -> None:
    channel.mute()
    channel.handle_channel_mute_event(E.REQUEST_RECEIVED)
    channel.handle_channel_mute_event(E.THROTTLE_STARTED)
    channel.handle_channel_mute_event(E.RESPONSE_SENT)
    assert channel.mute_state is S.MUTED_AND_THROTTLED
    assert not channel.maybe_unmute()
    channel.handle_channel_mute_event(E.THROTTLE_ENDED)
    assert channel.maybe_unmute() and not channel.is_muted()


def test_mute_is_idempotent_and_does_not_reset_pending_state(channel: KafkaChannel) -> None:
    channel.mute()
    channel.handle_channel_mute_event(E.REQUEST_RECEIVED)
    channel.mute()
    assert channel.mute_state is S.MUTED_AND_RESPONSE_PENDING


def test_request_received_while_not_muted_is_invalid(channel: KafkaChannel) -> None:
    with pytest.raises(IllegalStateError):
        channel.handle_channel_mute_event(E.REQUEST_RECEIVED)


def test_second_send_while_one_in_progress_is_rejected(channel: KafkaChannel) -> None:
    channel.set_send(size_prefixed("c1", [b"x"]))
    with pytest.raises(IllegalStateError, match="prior send"):
        channel.set_send(size_prefixed("c1", [b"y"]))


def test_distinguished_name_is_rfc2253_most_specific_first() -> None:
    from pykafka_client.network.transport.transport_layer import distinguished_name

    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc."),), (("commonName", "client-1"),))
    assert distinguished_name(subject) == "CN=client-1,O=Acme\\, Inc.,C=US"


def test_plaintext_channel_principal_is_anonymous(channel: KafkaChannel) -> None:
    assert channel.principal() == "ANONYMOUS"


def test_mute_states_and_events_hash_by_identity() -> None:
    """The transitions are looked up twice per request: the members hash as objects (a C call), not through Enum's
    Python-level hash of the name; equality was identity already."""
    hashes: list[object] = [ChannelMuteState.__hash__, ChannelMuteEvent.__hash__]
    assert all(h is object.__hash__ for h in hashes)
    assert next_mute_state(ChannelMuteState.MUTED, ChannelMuteEvent.REQUEST_RECEIVED) is (
        ChannelMuteState.MUTED_AND_RESPONSE_PENDING)


@pytest.mark.parametrize(("state", "event"), [(s, e) for s in S for e in E])
def test_channel_takes_each_valid_event_and_raises_for_an_invalid_one_keeping_its_state(
        channel: KafkaChannel, state: ChannelMuteState, event: ChannelMuteEvent) -> None:
    channel.mute_state = state
    if (state, event) in VALID:
        channel.handle_channel_mute_event(event)
        assert channel.mute_state is VALID[(state, event)]
    else:
        with pytest.raises(IllegalStateError, match=f"Cannot transition from {state.value} for {event.value}"):
            channel.handle_channel_mute_event(event)
        assert channel.mute_state is state


class _StepAuthenticator:
    """Completes after ``steps`` authenticate() calls (one per prepare())."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.asked = 0

    def authenticate(self, transport: object) -> None:
        self.steps -= 1

    def complete(self) -> bool:
        self.asked += 1
        return self.steps <= 0

    def wants_write(self) -> bool:
        return False

    def principal(self) -> str | None:
        return None


def test_readiness_is_the_state_the_handshakes_reach() -> None:
    """ready() is the state READY: entered in prepare() once authentication completes, left when a re-authentication
    begins; asking it costs no call to the authenticator."""
    from pykafka_client.network.transport.selectable import ChannelState

    a, b = socket.socketpair()
    a.setblocking(False)
    auth = _StepAuthenticator(2)
    ch = KafkaChannel("c1", PlaintextTransportLayer(a), auth)
    try:
        def state() -> ChannelState:  # read afresh: each prepare() may move it
            return ch.state

        assert not ch.ready() and state() is ChannelState.AUTHENTICATE
        ch.prepare()
        assert not ch.ready()
        ch.prepare()
        assert ch.ready() and state() is ChannelState.READY
        asked = auth.asked
        for _ in range(3):
            assert ch.ready()
        assert auth.asked == asked
        ch.begin_reauthentication()  # as the client's Selector and the broker's Processor call it
        assert not ch.ready() and ch.state is ChannelState.AUTHENTICATE
        auth.steps = 1
        ch.prepare()
        assert ch.ready()
    finally:
        ch.close()
        b.close()


def _outcome(channel: KafkaChannel, step: Callable[[], bool]) -> tuple[object, object]:
    """(what ``step`` returned or the error it raised, the mute state after it)."""
    try:
        result: object = step()
    except IllegalStateError as e:
        result = str(e)
    return result, channel.mute_state


@pytest.mark.parametrize("state", list(S))
def test_request_received_is_mute_then_the_event_in_one_step(channel: KafkaChannel, state: ChannelMuteState) -> None:
    """``request_received`` (the broker Processor's one call a request) returns, raises and leaves the state as
    ``mute()`` followed by ``handle_channel_mute_event(REQUEST_RECEIVED)``, in every state."""
    def mute_then_event() -> bool:
        was_reading = channel.mute()
        channel.handle_channel_mute_event(E.REQUEST_RECEIVED)
        return was_reading

    channel.mute_state = state
    expected = _outcome(channel, mute_then_event)
    channel.mute_state = state
    got = _outcome(channel, channel.request_received)
    if isinstance(expected[0], str):  # raised: the same error, and the state mute() left (MUTED, or as it was)
        assert got == expected
    else:
        assert got == expected and (got[0] is (state is S.NOT_MUTED))


@pytest.mark.parametrize("state", list(S))
def test_response_sent_is_the_event_then_maybe_unmute_in_one_step(channel: KafkaChannel,
                                                                  state: ChannelMuteState) -> None:
    """``response_sent`` returns, raises and leaves the state as ``handle_channel_mute_event(RESPONSE_SENT)``
    followed by ``maybe_unmute()``, in every state."""
    def event_then_unmute() -> bool:
        channel.handle_channel_mute_event(E.RESPONSE_SENT)
        return channel.maybe_unmute()

    channel.mute_state = state
    expected = _outcome(channel, event_then_unmute)
    channel.mute_state = state
    assert _outcome(channel, channel.response_sent) == expected
