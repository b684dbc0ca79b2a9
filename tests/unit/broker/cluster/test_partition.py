"""A leader's view of its partition: follower fetch state, ISR shrink and expand, high watermark (MockTime)."""

from __future__ import annotations

from mini_broker.cluster.partition import Partition

LAG_MS = 5000


def _leader(isr: list[int] | None = None, leo: int = 0, now: int = 0) -> Partition:
    p = Partition("t", 0, local_id=0)
    assert p.update_registration([0, 1, 2], isr or [0, 1, 2], 0, 3, 0, leo, now) == "leader"
    return p


def test_high_watermark_is_the_minimum_log_end_of_the_isr() -> None:
    p = _leader()
    assert p.high_watermark(10, 0) == 0  # followers' log ends unknown yet
    p.update_follower_fetch(1, 10, 10, 1)
    assert p.high_watermark(10, 0) == 0
    p.update_follower_fetch(2, 7, 10, 1)
    assert p.high_watermark(10, 0) == 7
    p.update_follower_fetch(2, 10, 10, 2)
    assert p.high_watermark(10, 7) == 10


def test_high_watermark_never_goes_back() -> None:
    p = _leader()
    p.update_follower_fetch(1, 3, 10, 1)
    p.update_follower_fetch(2, 3, 10, 1)
    assert p.high_watermark(10, 5) == 5


def test_a_follower_out_of_the_isr_does_not_hold_the_high_watermark() -> None:
    p = _leader(isr=[0, 1])
    p.update_follower_fetch(1, 10, 10, 1)
    p.update_follower_fetch(2, 0, 10, 1)
    assert p.high_watermark(10, 0) == 10


def test_isr_shrinks_after_replica_lag_time_max() -> None:
    p = _leader(leo=10, now=0)
    p.update_follower_fetch(1, 10, 10, 1000)  # caught up
    p.update_follower_fetch(2, 4, 10, 1000)  # behind
    assert p.isr_to_shrink(LAG_MS, LAG_MS) is None
    assert p.isr_to_shrink(LAG_MS + 1, LAG_MS) == [0, 1]


def test_a_follower_that_keeps_up_with_the_previous_log_end_stays() -> None:
    p = _leader(leo=10, now=0)
    p.update_follower_fetch(2, 8, 10, 4000)  # leader log end 10 at this fetch
    p.update_follower_fetch(2, 10, 12, 9000)  # reached the previous log end: caught up as of 4000
    p.update_follower_fetch(1, 12, 12, 9000)
    assert p.isr_to_shrink(9000, LAG_MS) is None
    assert p.isr_to_shrink(9001, LAG_MS) == [0, 1]


def test_isr_expands_when_the_follower_reaches_the_high_watermark_and_epoch_start() -> None:
    p = _leader(isr=[0, 1], leo=5)
    p.update_follower_fetch(2, 3, 10, 1)
    assert p.isr_to_expand(2, high_watermark=8) is None
    p.update_follower_fetch(2, 8, 10, 2)
    assert p.isr_to_expand(2, high_watermark=8) == [0, 1, 2]
    p.pending_isr = [0, 1, 2]
    assert p.isr_to_expand(2, high_watermark=8) is None  # one proposal at a time
    assert p.maximal_isr() == [0, 1, 2]


def test_a_new_leader_epoch_resets_follower_state() -> None:
    p = _leader()
    p.update_follower_fetch(1, 10, 10, 1)
    assert p.update_registration([0, 1, 2], [0, 1, 2], 0, 3, 1, 10, 2) == ""  # ISR-only change
    assert p.followers[1].log_end_offset == 10
    assert p.update_registration([0, 1, 2], [1, 2], 1, 4, 2, 10, 3) == "follower"
    assert not p.is_leader and p.followers == {}


def test_low_watermark_is_the_smallest_log_start_of_the_isr_and_waits_for_every_follower() -> None:
    p = _leader(isr=[0, 1, 2])
    assert p.low_watermark(50) == -1  # no follower reported its log start yet
    assert p.update_follower_fetch(1, 60, 60, 1, log_start_offset=50) is True
    assert p.low_watermark(50) == -1
    assert p.update_follower_fetch(2, 60, 60, 1, log_start_offset=20) is True
    assert p.low_watermark(50) == 20
    assert p.update_follower_fetch(2, 60, 60, 2, log_start_offset=20) is False  # unchanged: nothing to wake
    p.update_follower_fetch(2, 60, 60, 3, log_start_offset=50)
    assert p.low_watermark(50) == 50
    out_of_isr = _leader(isr=[0, 1])
    out_of_isr.update_follower_fetch(1, 60, 60, 1, log_start_offset=50)
    out_of_isr.update_follower_fetch(2, 10, 60, 1, log_start_offset=0)
    assert out_of_isr.low_watermark(50) == 50  # a follower out of the ISR does not hold DeleteRecords
