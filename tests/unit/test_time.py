from __future__ import annotations

import pytest

from pykafka_client.utils.time import MockTime, Timer


def test_mock_time_moves_only_when_told() -> None:
    t = MockTime()
    a = t.hi_res_clock_ms()
    assert t.hi_res_clock_ms() == a
    t.sleep(250)
    assert t.hi_res_clock_ms() == a + 250


def test_mock_time_auto_tick_and_never_backwards() -> None:
    t = MockTime(auto_tick_ms=1)
    a = t.hi_res_clock_ms()
    assert t.hi_res_clock_ms() > a
    with pytest.raises(ValueError):
        t.set_current_time_ms(0)


def test_timer_expiry_and_reset() -> None:
    t = MockTime()
    timer = t.timer(100)
    assert not timer.is_expired() and timer.remaining_ms() == 100
    t.sleep(60)
    assert timer.remaining_ms() == 100  # not updated yet
    timer.update()
    assert timer.remaining_ms() == 40 and timer.elapsed_ms() == 60
    t.sleep(40)
    timer.update()
    assert timer.is_expired() and timer.remaining_ms() == 0
    timer.reset(10)
    assert not timer.is_expired() and timer.remaining_ms() == 10
    with pytest.raises(ValueError):
        Timer(t, -1)


def test_listeners_are_told_of_every_move() -> None:
    t = MockTime()
    seen: list[int] = []
    t.add_listener(lambda: seen.append(t.hi_res_clock_ms()))
    t.sleep(5)
    t.sleep(0)
    t.set_current_time_ms(t.milliseconds() + 7)
    assert len(seen) == 2


def test_nanoseconds_clock_is_the_c_clock_for_system_time_and_follows_any_other_time() -> None:
    import time as _time

    from pykafka_client.utils.time import SYSTEM_TIME, nanoseconds_clock

    # the system time's clock is the C function itself: no Python-level call on the network threads' reads
    assert nanoseconds_clock(SYSTEM_TIME) is _time.monotonic_ns
    t = MockTime()
    clock = nanoseconds_clock(t)
    before = clock()
    t.sleep(5)
    assert clock() == before + 5_000_000 == t.nanoseconds()
