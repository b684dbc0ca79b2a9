"""ConnectionQuotas: per-listener and broker-wide counts (with the protected inter-broker listener),
lowered limits (closeExcessConnections), and KIP-612 creation rates per listener and per IP."""

from __future__ import annotations

import time

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.network.connection_quotas import (
    INT_MAX,
    ConnectionQuotas,
    ConnectionThrottledError,
    TokenBucket,
    TooManyConnectionsError,
)
from pykafka_client.utils.time import MockTime


def test_listener_limit_waits_then_times_out_and_other_listeners_go_on() -> None:
    q = ConnectionQuotas(100)
    q.add_listener("A", max_connections=2)
    q.add_listener("B")
    q.inc("ip", listener="A")
    q.inc("ip", listener="A")
    with pytest.raises(TooManyConnectionsError):
        q.inc("ip", timeout_s=0.01, listener="A")
    q.inc("ip", timeout_s=0.01, listener="B")
    q.dec("ip", "A")
    q.inc("ip", timeout_s=0.01, listener="A")
    assert q.listener_count("A") == 2 and q.listener_count("B") == 1 and q.total == 3


def test_inter_broker_listener_is_exempt_from_the_broker_wide_limit() -> None:
    q = ConnectionQuotas(100, max_connections=1, protected_listener="INTERNAL")
    q.add_listener("EXTERNAL")
    q.add_listener("INTERNAL")
    q.inc("a", listener="EXTERNAL")
    with pytest.raises(TooManyConnectionsError):
        q.inc("b", timeout_s=0.01, listener="EXTERNAL")
    q.inc("c", timeout_s=0.01, listener="INTERNAL")
    # over the broker-wide limit now: the unprotected listener closes its excess, the protected one does not
    assert q.max_connections_exceeded("EXTERNAL") and not q.max_connections_exceeded("INTERNAL")


def test_lowered_limit_is_reported_as_excess() -> None:
    q = ConnectionQuotas(100)
    q.add_listener("A")
    for _ in range(3):
        q.inc("ip", listener="A")
    assert not q.max_connections_exceeded("A")
    q.update_max_connections(2, listener="A")
    assert q.max_connections_exceeded("A")
    q.dec("ip", "A")
    assert not q.max_connections_exceeded("A")


def test_limited_says_whether_any_connection_limit_is_finite() -> None:
    """Processors skip the excess check while no limit is finite; lowering one (broker-wide or a listener's) turns
    it on, raising it back to unlimited off."""
    q = ConnectionQuotas(100)
    q.add_listener("A")
    assert not q.limited
    q.update_max_connections(2, listener="A")
    assert q.limited
    q.update_max_connections(INT_MAX, listener="A")
    assert not q.limited
    q.update_max_connections(5)
    assert q.limited
    assert ConnectionQuotas(100, max_connections=3).limited
    q2 = ConnectionQuotas(100)
    q2.add_listener("B", max_connections=1)
    assert q2.limited


def test_token_bucket() -> None:
    b = TokenBucket(5, 0.0)
    for _ in range(5):
        assert b.delay(0.0) == 0
        b.take()
    assert b.delay(0.0) == pytest.approx(0.2)
    assert b.delay(0.2) == pytest.approx(0.0)


def test_ip_rate_throttles_and_rejected_connections_are_not_recorded() -> None:
    t = MockTime()
    q = ConnectionQuotas(2, time=t)
    q.update_ip_connection_rate(None, 2)  # default for every IP: 2 connections/s
    q.update_ip_connection_rate("10.0.0.9", 100)
    q.inc("a")
    q.inc("a")
    with pytest.raises(TooManyConnectionsError):  # the count limit first: not recorded in the rate
        q.inc("a")
    q.dec("a")
    with pytest.raises(ConnectionThrottledError) as e:
        q.inc("a")
    assert e.value.throttle_s == pytest.approx(0.5)
    for _ in range(2):
        q.inc("10.0.0.9")  # its own, higher quota
    t.sleep(500)
    q.inc("a")
    assert q.get("a") == 2 and q.metrics.ip_throttled_total == 1 and q.metrics.rejected_total == 1


def test_listener_rate_delays_the_acceptor() -> None:
    q = ConnectionQuotas(1000)
    q.add_listener("A", max_connection_creation_rate=20)
    t0 = time.monotonic()
    for _ in range(26):  # a burst of 20, then 6 more at 20/s
        q.inc("ip", listener="A")
    assert 0.25 <= time.monotonic() - t0 < 2.0
    assert q.metrics.rate_throttled_total >= 5


def test_listener_prefixed_configs() -> None:
    c = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                     "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
                     "max.connections": 100, "listener.name.internal.max.connections": "7",
                     "listener.name.plaintext.max.connection.creation.rate": "30"})
    assert c.listener_int("INTERNAL", "max.connections") == 7
    assert c.listener_int("PLAINTEXT", "max.connections") == 100
    assert c.listener_int("PLAINTEXT", "max.connection.creation.rate") == 30
