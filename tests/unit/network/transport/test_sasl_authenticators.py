"""Client and server SASL authenticators driven against each other over an in-memory pipe."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

import pytest

from pykafka_client.errors import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    UnsupportedSaslMechanismError,
)
from pykafka_client.network.transport.channel import PeerClosedError
from pykafka_client.network.transport.sasl import (
    PlainClient,
    PlainServer,
    SaslClientAuthenticator,
    SaslServerAuthenticator,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    mapping_verifier,
    wire,
)
from pykafka_client.network.transport.sasl.authenticator import SaslState
from pykafka_client.network.transport.sasl.mechanism import SaslClientMechanism, SaslServerMechanismFactory
from pykafka_client.network.transport.sasl.wire import MAX_RESERVED_CORRELATION_ID, MIN_RESERVED_CORRELATION_ID
from pykafka_client.network.transport.selectable import Buffer
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import encode_response
from pykafka_client.protocol.messages import SaslAuthenticateResponse
from pykafka_client.protocol.types import Chunk


class PipeEnd:
    """One end of an in-memory byte pipe; each write is accepted at most ``chunk`` bytes at a time."""

    def __init__(self, chunk: int) -> None:
        self.inbox = bytearray()
        self.peer: PipeEnd | None = None
        self.chunk = chunk
        self.closed = False

    @property
    def socket(self) -> socket.socket:
        raise NotImplementedError

    def finish_connect(self) -> None: ...

    def ready(self) -> bool:
        return True

    def handshake(self) -> None: ...

    def handshake_wants_write(self) -> bool:
        return False

    def read_into(self, view: memoryview) -> int:
        if not self.inbox:
            return -1 if self.peer is not None and self.peer.closed else 0
        n = min(view.nbytes, len(self.inbox), self.chunk)
        view[:n] = self.inbox[:n]
        del self.inbox[:n]
        return n

    def write_buffers(self, views: Sequence[Buffer]) -> int:
        assert self.peer is not None
        data = b"".join(bytes(v) for v in views)[: self.chunk]
        self.peer.inbox += data
        return len(data)

    def transfer_file(self, fd: int, offset: int, count: int) -> int:
        raise NotImplementedError

    def has_bytes_buffered(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

    def peer_principal(self) -> str | None:
        return None


def pipe(chunk: int = 1 << 20) -> tuple[PipeEnd, PipeEnd]:
    a, b = PipeEnd(chunk), PipeEnd(chunk)
    a.peer, b.peer = b, a
    return a, b


USERS = {"alice": "pw-a"}


def server_mechanisms() -> dict[str, SaslServerMechanismFactory]:
    out: dict[str, SaslServerMechanismFactory] = {"PLAIN": lambda: PlainServer(mapping_verifier(USERS))}
    for m in ScramMechanism:
        creds = {u: ScramCredential.from_password(m, p) for u, p in USERS.items()}
        out[m.mechanism_name] = lambda m=m, c=creds: ScramServer(m, c)  # type: ignore[misc]
    return out


def run(
    client_mech: SaslClientMechanism, chunk: int = 1 << 20, enabled: dict[str, SaslServerMechanismFactory] | None = None
) -> tuple[SaslClientAuthenticator, SaslServerAuthenticator]:
    c_end, s_end = pipe(chunk)
    client = SaslClientAuthenticator("c", client_mech, "cid")
    server = SaslServerAuthenticator("s", enabled or server_mechanisms())
    for _ in range(10_000):
        if client.complete() and server.complete():
            break
        client.authenticate(c_end)
        if server.state is not SaslState.FAILED:
            try:
                server.authenticate(s_end)
            except (SaslAuthenticationError, UnsupportedSaslMechanismError):
                pass  # the client must learn why from the response the server wrote first
    return client, server


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
@pytest.mark.parametrize(
    "make",
    [
        lambda: PlainClient("alice", "pw-a"),
        lambda: ScramClient(ScramMechanism.SCRAM_SHA_256, "alice", "pw-a"),
        lambda: ScramClient(ScramMechanism.SCRAM_SHA_512, "alice", "pw-a"),
    ],
)
def test_authentication_completes_with_any_write_size(make: object, chunk: int) -> None:
    client, server = run(make(), chunk)  # type: ignore[operator]
    assert client.complete() and server.complete()
    assert server.principal() == "alice"
    assert not client.wants_write() and not server.wants_write()


def test_wrong_password_reaches_client_with_server_message() -> None:
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        run(PlainClient("alice", "nope"))


def test_server_fails_after_writing_its_error_response() -> None:
    c_end, s_end = pipe()
    client = SaslClientAuthenticator("c", ScramClient(ScramMechanism.SCRAM_SHA_256, "alice", "nope"))
    server = SaslServerAuthenticator("s", server_mechanisms())
    failures: list[BaseException] = []
    for _ in range(50):
        for auth, end in ((client, c_end), (server, s_end)):
            if auth.state is SaslState.FAILED:
                continue
            try:
                auth.authenticate(end)
            except (SaslAuthenticationError, PeerClosedError) as e:
                failures.append(e)
    assert [type(f) for f in failures] == [SaslAuthenticationError, SaslAuthenticationError]
    assert client.state is SaslState.FAILED and server.state is SaslState.FAILED


def test_unsupported_mechanism() -> None:
    enabled = {"PLAIN": server_mechanisms()["PLAIN"]}
    with pytest.raises(UnsupportedSaslMechanismError, match=r"'SCRAM-SHA-256' not enabled in the server, enabled mechanisms are \['PLAIN'\]"):
        run(ScramClient(ScramMechanism.SCRAM_SHA_256, "alice", "pw-a"), enabled=enabled)


def test_client_uses_reserved_correlation_ids() -> None:
    c_end, _ = pipe()
    client = SaslClientAuthenticator("c", PlainClient("a", "b"))
    client.authenticate(c_end)
    assert c_end.peer is not None
    frame = bytes(c_end.peer.inbox)
    correlation_id = int.from_bytes(frame[8:12], "big", signed=True)
    assert MIN_RESERVED_CORRELATION_ID <= correlation_id <= MAX_RESERVED_CORRELATION_ID


def test_server_rejects_other_requests_before_handshake() -> None:
    c_end, s_end = pipe()
    # A Metadata v1 request header (api key 3) with an empty body.
    payload = (3).to_bytes(2, "big") + (1).to_bytes(2, "big") + (5).to_bytes(4, "big") + b"\xff\xff" + b"\0\0\0\0"
    c_end.write_buffers([memoryview(len(payload).to_bytes(4, "big") + payload)])
    server = SaslServerAuthenticator("s", server_mechanisms())
    with pytest.raises(IllegalSaslStateError, match="type 3 v1 during SASL handshake"):
        server.authenticate(s_end)


def test_peer_close_during_authentication() -> None:
    c_end, s_end = pipe()
    s_end.close()
    client = SaslClientAuthenticator("c", PlainClient("a", "b"))
    with pytest.raises(PeerClosedError):
        for _ in range(3):
            client.authenticate(c_end)


class LifetimeServer:
    """A scripted SASL server over a pipe: accepts PLAIN and answers a session lifetime (KIP-368, v1+)."""

    def __init__(self, end: PipeEnd, lifetime_ms: int) -> None:
        self.end = end
        self.lifetime_ms = lifetime_ms
        self.handshakes = 0

    def serve(self) -> None:
        while len(self.end.inbox) >= 4:
            (size,) = struct.unpack_from(">i", self.end.inbox)
            if len(self.end.inbox) < 4 + size:
                return
            payload = memoryview(bytes(self.end.inbox[4:4 + size]))
            del self.end.inbox[:4 + size]
            header, _ = wire.decode_request_header(payload)
            if header.request_api_key == ApiKey.SASL_HANDSHAKE:
                self.handshakes += 1
                self._answer(wire.handshake_response(header, 0, ["PLAIN"]))
            else:
                body = SaslAuthenticateResponse(auth_bytes=b"", session_lifetime_ms=self.lifetime_ms)
                self._answer(encode_response(body, ApiKey.SASL_AUTHENTICATE, header.request_api_version,
                                             header.correlation_id))

    def _answer(self, chunks: list[Chunk]) -> None:
        assert self.end.peer is not None  # the frame's pieces carry its size prefix
        self.end.peer.inbox += b"".join(bytes(c) for c in chunks if isinstance(c, (bytes, bytearray, memoryview)))


def test_reauthentication_runs_the_exchange_again_with_a_fresh_mechanism() -> None:
    """KIP-368: after an authentication that got a session lifetime, the client can re-authenticate with a fresh
    mechanism on the same transport; without a lifetime (or a way to make a mechanism) it cannot."""
    client, _ = run(PlainClient("alice", "pw-a"))
    assert client.complete() and client.authentications == 1
    assert not client.can_reauthenticate()  # the server answered no lifetime
    with pytest.raises(IllegalSaslStateError, match="session lifetime"):
        client.begin_reauthentication()

    made: list[PlainClient] = []

    def fresh() -> PlainClient:
        made.append(PlainClient("alice", "pw-a"))
        return made[-1]

    c_end, s_end = pipe()
    server = LifetimeServer(s_end, 1000)
    auth = SaslClientAuthenticator("c", fresh(), "cid", fresh)
    assert not auth.can_reauthenticate()  # not authenticated yet

    def drive() -> None:
        for _ in range(10):
            auth.authenticate(c_end)
            server.serve()
            if auth.complete():
                return
        raise AssertionError(f"stuck in {auth.state}")

    drive()
    assert auth.session_lifetime_ms == 1000 and auth.can_reauthenticate()
    auth.begin_reauthentication()
    assert not auth.complete() and auth.wants_write() and auth.session_lifetime_ms == 0
    drive()
    assert (len(made), server.handshakes, auth.authentications) == (2, 2, 2)
    assert auth.can_reauthenticate()
