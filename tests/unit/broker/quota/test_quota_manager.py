"""Client quotas without I/O: entity precedence, Kafka's windowed rate and throttle time (MockTime)."""

from __future__ import annotations

import pytest

from mini_broker.quota.client_quotas import (
    CLIENT_ID,
    IP,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotaStore,
    InvalidQuotaError,
    make_entity,
)
from mini_broker.quota.quota_manager import QuotaManagers, WindowedRate, throttle_time_ms
from pykafka_client.utils.time import MockTime


def test_precedence_most_specific_first() -> None:
    s = ClientQuotaStore()
    s.alter(make_entity([(CLIENT_ID, None)]), PRODUCER_BYTE_RATE, 1)
    s.alter(make_entity([(CLIENT_ID, "app")]), PRODUCER_BYTE_RATE, 2)
    s.alter(make_entity([(USER, None)]), PRODUCER_BYTE_RATE, 3)
    s.alter(make_entity([(USER, "alice")]), PRODUCER_BYTE_RATE, 4)
    s.alter(make_entity([(USER, "alice"), (CLIENT_ID, "app")]), PRODUCER_BYTE_RATE, 5)

    def bound(user: str, client: str) -> float | None:
        q = s.resolve(user, client, PRODUCER_BYTE_RATE)
        return None if q is None else q.bound

    assert bound("alice", "app") == 5
    assert bound("alice", "other") == 4
    assert bound("bob", "app") == 3  # any user quota (here the default user's) beats client-id quotas
    s.alter(make_entity([(USER, None)]), PRODUCER_BYTE_RATE, None)
    assert bound("bob", "app") == 2 and bound("bob", "x") == 1
    assert s.resolve("bob", "x", "consumer_byte_rate") is None


def test_invalid_entities_and_keys() -> None:
    with pytest.raises(InvalidQuotaError):
        make_entity([(IP, "1.2.3.4"), (USER, "a")])
    with pytest.raises(InvalidQuotaError):
        make_entity([("group", "g")])
    s = ClientQuotaStore()
    with pytest.raises(InvalidQuotaError):
        s.alter(make_entity([(USER, "a")]), "connection_creation_rate", 5)
    with pytest.raises(InvalidQuotaError):
        s.alter(make_entity([(USER, "a")]), PRODUCER_BYTE_RATE, -1)


def test_describe_filters() -> None:
    s = ClientQuotaStore()
    s.alter(make_entity([(USER, "a")]), PRODUCER_BYTE_RATE, 1)
    s.alter(make_entity([(USER, None)]), PRODUCER_BYTE_RATE, 2)
    s.alter(make_entity([(USER, "a"), (CLIENT_ID, "c")]), PRODUCER_BYTE_RATE, 3)
    assert len(s.describe([], False)) == 3
    assert [v for _, v in s.describe([(USER, 0, "a")], True)] == [{PRODUCER_BYTE_RATE: 1.0}]
    assert len(s.describe([(USER, 0, "a")], False)) == 2
    assert [v for _, v in s.describe([(USER, 1, None)], False)] == [{PRODUCER_BYTE_RATE: 2.0}]


def test_windowed_rate_is_measured_over_at_least_samples_minus_one_windows() -> None:
    r = WindowedRate(11, 1000)
    r.record(10_000, 0)
    assert r.window_size_ms(0) == 10_000
    assert r.rate(0) == pytest.approx(1000.0)
    assert throttle_time_ms(r, 500, 0) == 10_000  # twice the bound: wait as long as the window again
    assert throttle_time_ms(r, 2000, 0) == 0
    r.record(0, 20_000)  # the old sample fell out of the 11 windows
    assert r.rate(20_000) == 0


def test_default_client_quota_is_measured_per_client_and_throttles() -> None:
    t = MockTime()
    q = QuotaManagers(samples=11, window_s=1, time=t)
    assert not q.any_active()
    q.alter(make_entity([(CLIENT_ID, None)]), PRODUCER_BYTE_RATE, 1000)
    assert q.any_active() and q.produce.active() and not q.fetch.active()
    assert q.produce.record_and_get_throttle_ms("u", "a", 10_000) == 0  # 1000 B/s over 10 s: at the bound
    assert q.produce.record_and_get_throttle_ms("u", "a", 10_000) == 10_000
    assert q.produce.record_and_get_throttle_ms("u", "b", 10_000) == 0  # another client id: its own sensor
    t.sleep(30_000)
    assert q.produce.record_and_get_throttle_ms("u", "a", 100) == 0


def test_ip_quota_changes_reach_the_connection_quotas() -> None:
    q = QuotaManagers()
    seen: list[tuple[str | None, float | None]] = []
    q.on_ip_quota = lambda ip, rate: seen.append((ip, rate))
    q.alter(make_entity([(IP, None)]), "connection_creation_rate", 10)
    q.alter(make_entity([(IP, "1.2.3.4")]), "connection_creation_rate", None)
    assert seen == [(None, 10.0), ("1.2.3.4", None)]
    assert not q.any_active()  # ip quotas are enforced by the acceptor, not on requests
