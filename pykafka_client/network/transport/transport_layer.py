"""Transport layers: the byte pipe under a :class:`~pykafka_client.network.transport.channel.KafkaChannel`.

Java: ``common.network.TransportLayer``, ``PlaintextTransportLayer``, ``SslTransportLayer``. Every method
is non-blocking: reads return 0 when nothing is available and -1 at end of stream, writes return the
bytes the kernel (or TLS) accepted, possibly 0. Errors other than "would block" propagate as ``OSError``
(or :class:`~pykafka_client.errors.SslAuthenticationError` for a failed TLS handshake).
"""

from __future__ import annotations

import errno
import os
import socket
from typing import TYPE_CHECKING, Protocol, Sequence

from pykafka_client.errors import SslAuthenticationError
from pykafka_client.network.transport.selectable import Buffer

if TYPE_CHECKING:
    # imported by the TLS methods when they run: a PLAINTEXT client never loads the ssl module (~5 MiB of RSS)
    import ssl

#: Largest TLS record payload; TLS writes are cut to this so a retried write repeats the same bytes.
TLS_RECORD_SIZE = 16_384


class TransportLayer(Protocol):
    """What a channel needs from its transport."""

    @property
    def socket(self) -> socket.socket: ...

    def finish_connect(self) -> None:
        """After the socket became writable while connecting: raise ``OSError`` if it failed."""
        ...

    def ready(self) -> bool:
        """True once the transport handshake (TLS) is done; plaintext is always ready."""
        ...

    def handshake(self) -> None:
        """Make progress on the transport handshake without blocking."""
        ...

    def handshake_wants_write(self) -> bool:
        """During the handshake: True if the next step needs the socket writable, else readable."""
        ...

    def read_into(self, view: memoryview) -> int: ...

    def write_buffers(self, views: Sequence[Buffer]) -> int: ...

    def transfer_file(self, fd: int, offset: int, count: int) -> int: ...

    def has_bytes_buffered(self) -> bool:
        """True when bytes were read from the socket but not yet returned by ``read_into`` (TLS):
        the selector will not report the socket readable for them."""
        ...

    def close(self) -> None: ...

    def peer_principal(self) -> str | None:
        """The peer's identity established by the transport (TLS client certificate), if any."""
        ...


#: Short attribute names of an RFC 2253 distinguished name (what Java's X500Principal prints).
_DN_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "EMAILADDRESS",
}


def _escape_dn_value(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out


def distinguished_name(subject: object) -> str:
    """RFC 2253 form (most specific RDN first) of a ``getpeercert()['subject']`` tuple."""
    rdns = []
    for rdn in subject:  # type: ignore[attr-defined]
        rdns.append("+".join(f"{_DN_NAMES.get(k, k)}={_escape_dn_value(str(v))}" for k, v in rdn))
    return ",".join(reversed(rdns))


def check_connect_error(sock: socket.socket) -> None:
    """Raise the pending connect error of a non-blocking socket, if any."""
    err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err != 0:
        raise OSError(err, os.strerror(err))


class PlaintextTransportLayer:
    """Bytes straight to the socket: gathering ``sendmsg`` writes, ``sendfile`` for file regions."""

    __slots__ = ("_socket",)

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock

    @property
    def socket(self) -> socket.socket:
        return self._socket

    def finish_connect(self) -> None:
        check_connect_error(self._socket)

    def ready(self) -> bool:
        return True

    def handshake(self) -> None:
        return None

    def handshake_wants_write(self) -> bool:
        return False

    def read_into(self, view: memoryview) -> int:
        try:
            n = self._socket.recv_into(view)
        except (BlockingIOError, InterruptedError):
            return 0
        return n if n > 0 else -1

    def write_buffers(self, views: Sequence[Buffer]) -> int:
        try:
            if len(views) == 1:
                return self._socket.send(views[0])
            return self._socket.sendmsg(views)
        except (BlockingIOError, InterruptedError):
            return 0

    def transfer_file(self, fd: int, offset: int, count: int) -> int:
        try:
            n = os.sendfile(self._socket.fileno(), fd, offset, count)
        except (BlockingIOError, InterruptedError):
            return 0
        if n == 0:
            raise OSError(errno.EINVAL, f"file region ends past the end of the file (at offset {offset})")
        return n

    def has_bytes_buffered(self) -> bool:
        return False

    def close(self) -> None:
        self._socket.close()

    def peer_principal(self) -> str | None:
        return None


class SslTransportLayer:
    """TLS over a connected non-blocking socket, via ``SSLContext.wrap_socket``.

    The handshake is driven by :meth:`handshake` from the selector loop (``SSLWantRead/WriteError``
    just set the interest). TLS cannot gather or ``sendfile``: writes are cut into TLS-record sized
    chunks (small pieces are coalesced up to one record), and file regions are ``pread`` a record at
    a time. A write that TLS refused is retried with exactly the same bytes, as OpenSSL requires.
    """

    __slots__ = ("_raw", "_ssl", "_context", "_server_side", "_server_hostname", "_peer", "_ready", "_wants_write",
                 "_post_handshake")

    def __init__(
        self,
        sock: socket.socket,
        context: ssl.SSLContext,
        *,
        server_side: bool,
        server_hostname: str | None = None,
        peer: str = "",
    ) -> None:
        self._raw = sock
        self._ssl: ssl.SSLSocket | None = None
        self._context = context
        self._server_side = server_side
        self._server_hostname = server_hostname
        self._peer = peer or (server_hostname or "peer")
        self._ready = False
        self._wants_write = not server_side
        # TLS 1.3: the server checks the client's certificate after the client's handshake is done, so its
        # rejection (an alert) arrives with the first read; until data has arrived a TLS error is a handshake failure
        self._post_handshake = False

    @property
    def socket(self) -> socket.socket:
        return self._ssl if self._ssl is not None else self._raw

    def finish_connect(self) -> None:
        check_connect_error(self._raw)

    def ready(self) -> bool:
        return self._ready

    def handshake_wants_write(self) -> bool:
        return self._wants_write

    def _fail(self, reason: str) -> SslAuthenticationError:
        role = "server" if self._server_side else "client"
        return SslAuthenticationError(f"SSL handshake ({role}) with {self._peer} failed: {reason}")

    def handshake(self) -> None:
        if self._ready:
            return
        import ssl  # loaded already (the context is an ssl.SSLContext): a sys.modules lookup

        try:
            if self._ssl is None:
                self._ssl = self._context.wrap_socket(
                    self._raw,
                    server_side=self._server_side,
                    server_hostname=None if self._server_side else self._server_hostname,
                    do_handshake_on_connect=False,
                )
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._wants_write = False
            return
        except ssl.SSLWantWriteError:
            self._wants_write = True
            return
        except ssl.SSLCertVerificationError as e:
            raise self._fail(f"certificate verification failed: {e.verify_message or e.reason}") from e
        except ssl.SSLError as e:
            raise self._fail(str(e.reason or e)) from e
        except ValueError as e:  # e.g. check_hostname without a server_hostname
            raise self._fail(str(e)) from e
        self._ready = True
        self._wants_write = False
        self._post_handshake = True

    def read_into(self, view: memoryview) -> int:
        assert self._ssl is not None
        import ssl

        try:
            n = self._ssl.recv_into(view)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
            return 0
        except ssl.SSLError as e:
            if self._post_handshake:
                raise self._fail(str(e.reason or e)) from e
            raise
        if n > 0:
            self._post_handshake = False
        return n if n > 0 else -1

    def write_buffers(self, views: Sequence[Buffer]) -> int:
        assert self._ssl is not None
        first = views[0]  # (bytes-like pieces of one byte per item: len() is the byte count)
        if len(first) >= TLS_RECORD_SIZE or len(views) == 1:
            chunk: Buffer = first[:TLS_RECORD_SIZE]
        else:
            parts: list[Buffer] = []
            size = 0
            for v in views:
                take = min(len(v), TLS_RECORD_SIZE - size)
                parts.append(v[:take])
                size += take
                if size >= TLS_RECORD_SIZE:
                    break
            chunk = b"".join(parts)
        import ssl

        try:
            return self._ssl.send(chunk)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
            return 0

    def transfer_file(self, fd: int, offset: int, count: int) -> int:
        data = os.pread(fd, min(count, TLS_RECORD_SIZE), offset)
        if not data:
            raise OSError(errno.EINVAL, f"file region ends past the end of the file (at offset {offset})")
        return self.write_buffers([memoryview(data)])

    def has_bytes_buffered(self) -> bool:
        return self._ssl is not None and self._ssl.pending() > 0

    def peer_principal(self) -> str | None:
        """The distinguished name of the verified peer certificate (e.g. ``CN=client-1,O=acme``),
        or None when the peer sent none (or it was not verified)."""
        if self._ssl is None or not self._ready:
            return None
        cert = self._ssl.getpeercert()
        if not cert or "subject" not in cert:
            return None
        return distinguished_name(cert["subject"])

    def close(self) -> None:
        if self._ssl is not None:
            self._ssl.close()
        else:
            self._raw.close()
