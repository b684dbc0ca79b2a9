"""ClusterConnectionStates contract (statements 1, 3-5, 7, 10-11) and the exponential backoff."""

from __future__ import annotations

import random
import socket

import pytest

from pykafka_client.errors import AuthenticationError
from pykafka_client.network.cluster_connection_states import (
    MAX_DELAY_MS,
    ClusterConnectionStates,
    ConnectionState,
)
from pykafka_client.network.exponential_backoff import ExponentialBackoff

BASE, MAX = 50, 1000
SETUP, SETUP_MAX = 10_000, 30_000


class Resolver:
    """A scripted DNS: ``answers[host]`` is returned (and may be changed between calls)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise socket.gaierror(f"unknown host {host}")
        return list(self.answers[host])


def states(base: int = BASE, max_: int = MAX, resolver: Resolver | None = None) -> ClusterConnectionStates:
    r = resolver or Resolver({"h": ["10.0.0.1"]})
    return ClusterConnectionStates(base, max_, SETUP, SETUP_MAX, r, random.Random(7))


def test_s01_never_seen_node_can_connect_with_zero_delay() -> None:
    s = states()
    assert s.can_connect("1", 0)
    assert s.connection_delay("1", 0) == 0
    assert not s.is_blacked_out("1", 0)


def test_s01_state_changes() -> None:
    s = states()
    s.connecting("1", 100, "h")
    assert s.is_connecting("1") and not s.can_connect("1", 100)
    assert s.connection_delay("1", 100) == s.connection_setup_timeout_ms("1")
    s.checking_api_versions("1")
    assert s.is_checking_api_versions("1") and s.is_connected("1")
    s.ready("1")
    assert s.is_ready("1", 100) and s.connection_delay("1", 100) == MAX_DELAY_MS
    s.disconnected("1", 200)
    assert s.connection_state("1") is ConnectionState.DISCONNECTED
    assert s.is_blacked_out("1", 200)
    s.remove("1")
    assert s.node_state("1") is None and s.can_connect("1", 200)


def test_s03_disconnect_backoff_is_base_with_jitter_then_zero() -> None:
    s = states()
    s.connecting("1", 1000, "h")
    s.disconnected("1", 1000)
    delay = s.connection_delay("1", 1000)
    assert BASE * 0.8 <= delay <= BASE * 1.2
    assert not s.can_connect("1", 1000 + delay - 1)
    assert s.connection_delay("1", 1000 + delay) == 0
    assert s.can_connect("1", 1000 + delay)


def test_s04_backoff_doubles_until_max_and_ready_resets_it() -> None:
    s = states()
    now = 0
    expected = float(BASE)
    for _ in range(8):
        s.connecting("1", now, "h")
        s.disconnected("1", now)
        backoff = s.reconnect_backoff_ms("1")
        want = min(MAX, expected)
        assert want * 0.8 - 1 <= backoff <= min(MAX, want * 1.2) + 1
        now += backoff
        expected *= 2
    assert s.reconnect_backoff_ms("1") <= MAX
    s.connecting("1", now, "h")
    s.ready("1")
    s.disconnected("1", now)
    assert BASE * 0.8 <= s.reconnect_backoff_ms("1") <= BASE * 1.2


def test_s04_exponential_backoff_formula() -> None:
    b = ExponentialBackoff(100, 2, 1000, 0.2, random.Random(1))
    for n, term in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1000), (10, 1000)]:
        for _ in range(20):
            v = b.backoff(n)
            assert min(1000, term * 0.8) - 1 <= v <= min(1000, term * 1.2)


def test_s05_equal_base_and_max_gives_constant_backoff_without_jitter() -> None:
    s = states(base=300, max_=300)
    for i in range(5):
        s.connecting("1", i * 1000, "h")
        s.disconnected("1", i * 1000)
        assert s.reconnect_backoff_ms("1") == 300
        assert s.connection_delay("1", i * 1000) == 300


def test_s07_setup_timeout_grows_exponentially_and_is_capped() -> None:
    s = states()
    s.connecting("1", 0, "h")
    first = s.connection_setup_timeout_ms("1")
    assert SETUP * 0.8 <= first <= SETUP * 1.2
    assert not s.is_connection_setup_timeout("1", first)
    assert s.is_connection_setup_timeout("1", first + 1)
    assert s.nodes_with_connection_setup_timeout(first + 1) == ["1"]
    s.disconnected("1", first + 1)
    s.connecting("1", 100_000, "h")
    second = s.connection_setup_timeout_ms("1")
    assert SETUP * 2 * 0.8 <= second <= SETUP * 2 * 1.2
    for i in range(5):
        s.disconnected("1", 200_000 + i)
        s.connecting("1", 200_000 + i, "h")
    assert s.connection_setup_timeout_ms("1") <= SETUP_MAX
    # Once connected the timeout goes back to its base value.
    s.checking_api_versions("1")
    assert SETUP * 0.8 <= s.connection_setup_timeout_ms("1") <= SETUP * 1.2
    assert s.nodes_with_connection_setup_timeout(10**9) == []


def test_s10_authentication_failure_blocks_until_backoff_and_clears_on_ready() -> None:
    s = states()
    s.connecting("1", 0, "h")
    err = AuthenticationError("bad creds")
    s.authentication_failed("1", 0, err)
    assert s.connection_state("1") is ConnectionState.AUTHENTICATION_FAILED
    assert s.authentication_exception("1") is err
    assert s.is_disconnected("1")
    backoff = s.reconnect_backoff_ms("1")
    assert not s.can_connect("1", backoff - 1)
    assert s.can_connect("1", backoff)
    s.connecting("1", backoff, "h")
    s.ready("1")
    assert s.authentication_exception("1") is None


def test_s11_all_resolved_addresses_are_tried_in_turn_then_re_resolved() -> None:
    r = Resolver({"h": ["10.0.0.1", "10.0.0.2", "10.0.0.3"]})
    s = states(resolver=r)
    seen = []
    now = 0
    for _ in range(3):
        s.connecting("1", now, "h")
        seen.append(s.current_address("1"))
        s.disconnected("1", now)
        now += 10_000
    assert seen == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert r.calls == ["h"]
    # The list is exhausted: the next attempt resolves again, and skips the address tried last
    # only when it is first in the new list.
    r.answers["h"] = ["10.0.0.3", "10.0.0.4"]
    s.connecting("1", now, "h")
    assert s.current_address("1") == "10.0.0.4"
    assert r.calls == ["h", "h"]


def test_s11_established_connection_drop_re_resolves_and_skips_last_ip() -> None:
    r = Resolver({"h": ["10.0.0.1", "10.0.0.2"]})
    s = states(resolver=r)
    s.connecting("1", 0, "h")
    assert s.current_address("1") == "10.0.0.1"
    s.checking_api_versions("1")
    s.ready("1")
    s.disconnected("1", 5)  # an established connection dropped
    s.connecting("1", 10_000, "h")
    assert s.current_address("1") == "10.0.0.2"
    assert r.calls == ["h", "h"]


def test_s11_single_address_is_not_skipped() -> None:
    r = Resolver({"h": ["10.0.0.1"]})
    s = states(resolver=r)
    for now in (0, 10_000, 20_000):
        s.connecting("1", now, "h")
        assert s.current_address("1") == "10.0.0.1"
        s.disconnected("1", now)


def test_s12_unknown_host_raises_oserror_from_current_address() -> None:
    s = states(resolver=Resolver({}))
    s.connecting("1", 0, "nowhere")
    with pytest.raises(OSError):
        s.current_address("1")


def test_host_change_resets_node_state() -> None:
    r = Resolver({"h": ["10.0.0.1"], "g": ["10.0.0.9"]})
    s = states(resolver=r)
    s.connecting("1", 0, "h")
    s.disconnected("1", 0)
    s.connecting("1", 0, "h")
    s.disconnected("1", 0)
    assert s.node_state("1").failed_attempts == 2  # type: ignore[union-attr]
    s.connecting("1", 5000, "g")
    assert s.node_state("1").failed_attempts == 0  # type: ignore[union-attr]
    assert s.current_address("1") == "10.0.0.9"


def test_throttle_makes_node_not_ready_until_deadline() -> None:
    s = states()
    s.connecting("1", 0, "h")
    s.ready("1")
    s.throttle("1", 500)
    assert not s.is_ready("1", 499) and s.throttle_delay_ms("1", 100) == 400
    assert s.poll_delay_ms("1", 100) == 400
    assert s.is_ready("1", 500) and s.throttle_delay_ms("1", 500) == 0
    s.throttle("1", 200)  # never moves backwards
    assert s.throttle_delay_ms("1", 100) == 400
