"""The acceptor's pause after running out of descriptors: 100 ms doubling to 1 s, then resumes."""

from __future__ import annotations

import pytest

from mini_broker.network.acceptor import AcceptBackoff


def test_backoff_doubles_to_one_second_and_resets() -> None:
    b = AcceptBackoff()
    now = 100.0
    pauses = []
    for _ in range(6):
        pauses.append(b.failed(now))
        assert b.remaining(now) == pytest.approx(pauses[-1])
        now += pauses[-1]
        assert b.remaining(now) is None  # the pause ran out: accept again
    assert pauses == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert b.failures == 6
    assert b.succeeded() == 6
    assert b.failures == 0 and b.failed(now) == 0.1


def test_a_twenty_second_exhaustion_logs_about_twenty_lines() -> None:
    """One failure (and one log line) per pause: at most ~21 in 20 s, whatever the accept backlog."""
    b = AcceptBackoff()
    now, end, failures = 0.0, 20.0, 0
    while now < end:
        now += b.failed(now)
        failures += 1
    assert failures <= 24
