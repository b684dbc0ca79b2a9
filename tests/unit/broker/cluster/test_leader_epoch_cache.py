"""Leader epoch cache (OffsetForLeaderEpoch answers) and the follower's truncation rule."""

from __future__ import annotations

from mini_broker.cluster.replica_fetcher import truncation_offset
from mini_broker.log.leader_epoch_cache import LeaderEpochCache


def test_end_offset_for_an_epoch_is_where_the_next_one_starts() -> None:
    cache = LeaderEpochCache([(0, 0), (2, 10), (5, 30)])
    assert cache.end_offset_for(0, 50) == (0, 10)
    assert cache.end_offset_for(1, 50) == (0, 10)  # epoch 1 never wrote: the largest epoch below answers
    assert cache.end_offset_for(2, 50) == (2, 30)
    assert cache.end_offset_for(5, 50) == (5, 50)
    assert cache.end_offset_for(9, 50) == (5, 50)
    assert LeaderEpochCache([(3, 5)]).end_offset_for(1, 9) == (-1, -1)


def test_assign_ignores_older_epochs_and_truncation_drops_later_entries() -> None:
    cache = LeaderEpochCache()
    cache.assign(1, 0)
    cache.assign(1, 5)
    cache.assign(0, 7)
    cache.assign(3, 9)
    assert cache.entries() == [(1, 0), (3, 9)]
    cache.truncate_from_end(9)
    assert cache.entries() == [(1, 0)] and cache.latest_epoch() == 1


def test_follower_truncates_to_the_leaders_end_of_its_epoch() -> None:
    # the old leader wrote 0..119 in epoch 1; the new leader (epoch 2) had only 0..99 of epoch 1
    assert truncation_offset(1, 1, 100, log_end=120, high_watermark=90, local_end_of_leader_epoch=120) == 100
    # the follower is behind the leader's end: nothing to cut
    assert truncation_offset(1, 1, 100, log_end=80, high_watermark=70, local_end_of_leader_epoch=80) == 80
    # the leader never had our latest epoch: cut where its older epoch ends here and there
    assert truncation_offset(3, 1, 100, log_end=150, high_watermark=90, local_end_of_leader_epoch=110) == 100
    # undefined answer: back to the high watermark
    assert truncation_offset(3, -1, -1, log_end=150, high_watermark=90, local_end_of_leader_epoch=-1) == 90
