"""FetchSessionCache and CachedPartition bookkeeping (KIP-227)."""

from __future__ import annotations

import uuid

from mini_broker.server.fetch_session import CachedPartition, FetchSessionCache
from pykafka_client.utils.time import MockTime

TID = uuid.UUID(int=5)


def test_disabled_cache_makes_no_sessions() -> None:
    assert FetchSessionCache(0, MockTime()).create(False) is None


def test_lru_eviction_and_unique_ids() -> None:
    cache = FetchSessionCache(2, MockTime())
    a, b = cache.create(False), cache.create(False)
    assert a is not None and b is not None and a.id != b.id and 0 not in (a.id, b.id)
    assert cache.get(a.id) is a  # a is now the most recently used
    c = cache.create(False)
    assert c is not None
    assert cache.get(b.id) is None and cache.get(a.id) is a and len(cache) == 2
    cache.remove(a.id)
    assert cache.get(a.id) is None


def test_upsert_forget_and_order() -> None:
    cache = FetchSessionCache(5, MockTime())
    s = cache.create(True)
    assert s is not None and s.epoch == 1
    s.upsert(CachedPartition("t", TID, 0, 10, 100))
    s.upsert(CachedPartition("t", TID, 1, 20, 100))
    s.upsert(CachedPartition("t", TID, 0, 15, 50))  # update in place keeps the order
    assert [(p.partition, p.fetch_offset, p.max_bytes) for p in s.partitions.values()] == [(0, 15, 50), (1, 20, 100)]
    s.move_to_end(s.partitions[(str(TID), 0)])
    assert [p.partition for p in s.partitions.values()] == [1, 0]
    s.forget("t", TID, 1)
    assert [p.partition for p in s.partitions.values()] == [0]


def test_must_report_only_changes() -> None:
    p = CachedPartition("t", TID, 0, 0, 100)
    assert p.must_report(0, 0, 5, 5, 0)  # first time
    assert not p.must_report(0, 0, 5, 5, 0)
    assert p.must_report(0, 10, 5, 5, 0)  # records
    assert p.must_report(0, 0, 6, 6, 0)  # high watermark moved
    assert p.must_report(3, 0, 6, 6, 0)  # error
    assert p.must_report(0, 0, 6, 6, 2)  # log start moved
