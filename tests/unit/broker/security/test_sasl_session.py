"""SaslServerSession (the broker's SASL authenticator) over an in-memory transport with MockTime: ApiVersions
before the handshake, the session lifetime and its expiry, re-authentication, the generic failure message and
the delayed failure."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import pytest

from mini_broker.security.listener_security import api_versions_handler
from mini_broker.security.sasl_authenticator import DelayedAuthFailures, SaslServerSession
from pykafka_client.errors import IllegalSaslStateError, SaslAuthenticationError
from pykafka_client.network.transport.sasl import wire
from pykafka_client.network.transport.sasl.plain import PlainServer, mapping_verifier
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import decode_response, encode_request
from pykafka_client.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from pykafka_client.protocol.types.primitives import Chunk
from pykafka_client.utils.time import MockTime
from tests.doubles.frames import frame_bytes

USERS = {"alice": "pw", "bob": "pw2"}


class MemoryTransport:
    """Bytes in (what the client sent) and out (what the server wrote)."""

    def __init__(self) -> None:
        self.inbound = bytearray()
        self.outbound = bytearray()
        self.closed = False

    def read_into(self, view: memoryview) -> int:
        if not self.inbound:
            return -1 if self.closed else 0
        n = min(len(view), len(self.inbound))
        view[:n] = self.inbound[:n]
        del self.inbound[:n]
        return n

    def write_buffers(self, views: Sequence[memoryview]) -> int:
        n = 0
        for v in views:
            self.outbound += v
            n += v.nbytes
        return n

    def frames(self) -> list[bytes]:
        out = []
        while self.outbound:
            (size,) = struct.unpack_from(">i", self.outbound, 0)
            out.append(bytes(self.outbound[4:4 + size]))
            del self.outbound[:4 + size]
        return out


def send(transport: MemoryTransport, chunks: list[Chunk]) -> None:
    transport.inbound += frame_bytes(chunks)


def session(time: MockTime, **kw: object) -> SaslServerSession:
    return SaslServerSession("c1", {"PLAIN": lambda: PlainServer(mapping_verifier(USERS))},
                             api_versions_handler(lambda: [(18, 0, 4), (17, 1, 1), (36, 0, 2), (3, 0, 12)]), time,
                             **kw)  # type: ignore[arg-type]


def plain_exchange(s: SaslServerSession, t: MemoryTransport, user: str, password: str, cid: int = 1
                   ) -> wire.SaslAuthenticateResponse:
    send(t, wire.handshake_request("PLAIN", cid, "test"))
    s.authenticate(t)  # type: ignore[arg-type]
    handshake = wire.decode_handshake_response(memoryview(t.frames()[0]), cid)
    assert handshake.error_code == 0 and handshake.mechanisms == ["PLAIN"]
    send(t, wire.authenticate_request(f"\0{user}\0{password}".encode(), cid + 1, "test"))
    try:
        s.authenticate(t)  # type: ignore[arg-type]
    finally:
        frames = t.frames()
    return wire.decode_authenticate_response(memoryview(frames[0]), cid + 1) if frames else None  # type: ignore[return-value]


def test_api_versions_before_the_handshake_lists_every_broker_api() -> None:
    s, t = session(MockTime()), MemoryTransport()
    send(t, encode_request(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 7, "c"))
    s.authenticate(t)  # type: ignore[arg-type]
    response = decode_response(memoryview(t.frames()[0]), ApiKey.API_VERSIONS, 3, 7)
    assert isinstance(response, ApiVersionsResponse)
    assert {k.api_key for k in response.api_keys} == {18, 17, 36, 3}


def test_session_lifetime_expiry_and_reauthentication() -> None:
    time = MockTime()
    s, t = session(time, max_reauth_ms=1000), MemoryTransport()
    response = plain_exchange(s, t, "alice", "pw")
    assert response.error_code == 0 and response.session_lifetime_ms == 1000
    assert s.complete() and s.principal() == "alice"
    time.sleep(999)
    assert not s.session_expired(time.nanoseconds())
    # KIP-368: a handshake on the authenticated connection, then a new exchange: the lifetime starts again
    s.begin_reauthentication(frame_bytes(wire.handshake_request("PLAIN", 10, "t"))[4:])
    assert not s.complete()
    s.authenticate(t)  # type: ignore[arg-type]
    assert wire.decode_handshake_response(memoryview(t.frames()[0]), 10).error_code == 0
    send(t, wire.authenticate_request(b"\0alice\0pw", 11, "t"))
    s.authenticate(t)  # type: ignore[arg-type]
    assert wire.decode_authenticate_response(memoryview(t.frames()[0]), 11).session_lifetime_ms == 1000
    assert s.complete() and s.reauthentications == 1
    time.sleep(500)
    assert not s.session_expired(time.nanoseconds())
    time.sleep(500)
    assert s.session_expired(time.nanoseconds())


def test_no_lifetime_without_max_reauth() -> None:
    time = MockTime()
    s, t = session(time), MemoryTransport()
    assert plain_exchange(s, t, "alice", "pw").session_lifetime_ms == 0
    time.sleep(10_000_000)
    assert not s.session_expired(time.nanoseconds())


def test_reauthentication_must_keep_the_principal() -> None:
    s, t = session(MockTime()), MemoryTransport()
    plain_exchange(s, t, "alice", "pw")
    s.begin_reauthentication(frame_bytes(wire.handshake_request("PLAIN", 10, "t"))[4:])
    s.authenticate(t)  # type: ignore[arg-type]
    t.frames()
    send(t, wire.authenticate_request(b"\0bob\0pw2", 11, "t"))
    with pytest.raises(SaslAuthenticationError):
        s.authenticate(t)  # type: ignore[arg-type]
    assert wire.decode_authenticate_response(memoryview(t.frames()[0]), 11).error_code == SaslAuthenticationError.code


def test_failure_answers_a_generic_message_then_raises() -> None:
    s, t = session(MockTime()), MemoryTransport()
    with pytest.raises(SaslAuthenticationError):
        plain_exchange(s, t, "nobody", "x")
    s2, t2 = session(MockTime()), MemoryTransport()
    with pytest.raises(SaslAuthenticationError):
        plain_exchange(s2, t2, "alice", "wrong")


def test_failure_with_delay_waits_for_the_processor() -> None:
    time = MockTime()
    failures = DelayedAuthFailures(time)
    s, t = session(time, failure_delay_ms=100, schedule_failure=failures.schedule), MemoryTransport()
    assert plain_exchange(s, t, "alice", "wrong") is None  # nothing answered yet, nothing raised
    assert s.failure_pending() and failures.due(time.nanoseconds()) == []
    assert len(failures) == 1
    assert failures.next_deadline_ns() == time.nanoseconds() + 100_000_000
    send(t, b"more bytes from an impatient client")  # type: ignore[arg-type]
    s.authenticate(t)  # type: ignore[arg-type]  # discarded, no spin, no answer
    assert t.frames() == []
    time.sleep(100)
    assert failures.due(time.nanoseconds()) == ["c1"]
    assert not failures  # nothing waits any more: the network thread skips its check
    s.send_failure_response(t)  # type: ignore[arg-type]
    response = wire.decode_authenticate_response(memoryview(t.frames()[0]), 2)
    assert response.error_code == SaslAuthenticationError.code
    assert response.error_message == ("Authentication failed during authentication due to invalid credentials with "
                                      "SASL mechanism PLAIN")


def test_unexpected_request_during_authentication_raises() -> None:
    s, t = session(MockTime()), MemoryTransport()
    send(t, wire.authenticate_request(b"\0alice\0pw", 1, "t"))  # no handshake first
    with pytest.raises(IllegalSaslStateError):
        s.authenticate(t)  # type: ignore[arg-type]
