"""A blocking Kafka-protocol connection from one broker to another (Kafka: ``BlockingSend`` /
``NetworkClientUtils.sendAndReceive``), for the replica fetchers and the transaction marker sender, over the
inter-broker listener with its TLS and SASL (:mod:`mini_broker.security.inter_broker`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mini_broker.security.inter_broker import InterBrokerSecurity, SecuredSocket, connector, read_frame, send_frame
from pykafka_client.protocol.headers import decode_response, encode_request
from pykafka_client.protocol.types import Message
from pykafka_client.utils.time import SYSTEM_TIME


class BrokerDirectory(Protocol):
    """This broker's id, where the other brokers listen and how to connect to them (what an inter-broker sender
    needs)."""

    @property
    def broker_id(self) -> int: ...

    def broker_endpoint(self, broker_id: int) -> tuple[str, int] | None: ...

    @property
    def inter_broker_security(self) -> InterBrokerSecurity | None: ...


class BrokerConnection:
    """Connects lazily to ``endpoint()`` (None: unknown broker) through ``security`` (None: plain TCP) and sends
    one request at a time. Any error closes the connection; the next request reconnects (the caller backs off)."""

    def __init__(self, endpoint: Callable[[], tuple[str, int] | None], client_id: str,
                 security: InterBrokerSecurity | None = None) -> None:
        self._endpoint = endpoint
        self.client_id = client_id
        self._connect = connector(security, SYSTEM_TIME)
        self._conn: SecuredSocket | None = None
        self._correlation = 0

    @property
    def authentications(self) -> int:
        """How many times the open connection authenticated (re-authentications included; 0: none open)."""
        return 0 if self._conn is None else self._conn.authentications

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def send_and_receive(self, body: Message, version: int, timeout_s: float) -> Message:
        try:
            return self._send_and_receive(body, version, timeout_s)
        except BaseException:
            self.close()
            raise

    def _send_and_receive(self, body: Message, version: int, timeout_s: float) -> Message:
        if self._conn is None:
            endpoint = self._endpoint()
            if endpoint is None:
                raise ConnectionError("the broker's endpoint is unknown")
            self._conn = self._connect(endpoint, timeout_s, self.client_id)
        conn = self._conn
        conn.sock.settimeout(timeout_s)
        conn.maybe_reauthenticate(self.client_id)
        self._correlation += 1
        chunks = encode_request(body, version, self._correlation, self.client_id)
        send_frame(conn.sock, chunks)
        payload = read_frame(conn.sock)
        api_key = body.API_KEY
        assert api_key is not None
        return decode_response(memoryview(payload), api_key, version, self._correlation)
