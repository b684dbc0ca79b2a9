"""A completed request's times in one kernel call (``_kernel.observe_request_times``, what
``BrokerMetrics.record_request_ns`` runs on the network thread) against its reference,
``metrics.observe_request_times_reference``: for random timestamps (unset ones, reversed pairs, the int64 range)
the counter and the six histograms end equal, and what the kernel declines changes nothing and is left to the
reference."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.metrics import (
    REQUEST_TIME_METRICS,
    BrokerMetrics,
    Counter,
    Histogram,
    observe_request_times_reference,
    request_times_ms,
)
from pykafka_client.protocol.records import _native
from pykafka_client.utils.time import MockTime

pytestmark = pytest.mark.skipif(not _native.native_available(), reason="the compiled record kernel is not built")

stamps = st.one_of(st.just(-1), st.integers(0, 10**12), st.integers(-(2**63), 2**63 - 1))
requests = st.tuples(*[stamps] * 8)


def instruments() -> tuple[threading.Lock, Counter, tuple[Histogram, ...]]:
    lock = threading.Lock()
    return lock, Counter(lock), tuple(Histogram(lock) for _ in REQUEST_TIME_METRICS)


def state(counter: Counter, histograms: tuple[Histogram, ...]) -> list[object]:
    return [counter.value, *[(h.count, h.sum, h.min, h.max) for h in histograms]]


@settings(max_examples=300, deadline=None)
@given(st.lists(requests, min_size=1, max_size=6))
def test_the_same_counts_sums_and_bounds_as_the_reference(stream: list[tuple[int, ...]]) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    lock_a, counter_a, hist_a = instruments()
    lock_b, counter_b, hist_b = instruments()
    for ns in stream:
        assert kernel.observe_request_times(lock_a, counter_a, hist_a, *ns)
        observe_request_times_reference(lock_b, counter_b, hist_b, *ns)
        assert not lock_a.locked()
    assert state(counter_a, hist_a) == state(counter_b, hist_b)
    for h in (*hist_a, *hist_b):
        assert type(h.sum) is float and type(h.min) is float and type(h.max) is float and type(h.count) is int


def test_the_six_times_of_a_request() -> None:
    # received at 1 ms, dequeued at 3, handled at 4, completed remotely at 10, queued at 11, dequeued at 12, sent at 15
    ms = 1_000_000
    assert request_times_ms(15 * ms, ms, 3 * ms, 4 * ms, 10 * ms, 11 * ms, 12 * ms, 15 * ms) == (
        14.0, 2.0, 1.0, 6.0, 1.0, 3.0)
    # no remote part: the local end stands for it; nothing sent (-1); a reversed pair counts 0
    assert request_times_ms(15 * ms, ms, 3 * ms, 4 * ms, -1, 11 * ms, 12 * ms, -1) == (14.0, 2.0, 1.0, 0.0, 1.0, 0.0)
    assert request_times_ms(15 * ms, 5 * ms, 3 * ms, 4 * ms, -1, -1, -1, -1) == (10.0, 0.0, 1.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("bad", ["huge_stamp", "bool_stamp", "int_sum", "unset_slot", "other_type", "five"])
def test_what_it_declines_changes_nothing(bad: str) -> None:
    kernel = _native.loaded_kernel()
    assert kernel is not None
    lock, counter, hist = instruments()
    ns: list[int] = [5, 1, 2, 3, -1, 3, 4, 5]
    for h in hist:  # one observation already, so that a change would show
        h.count, h.sum, h.min, h.max = 1, 1.0, 1.0, 1.0
    histograms: tuple[object, ...] = hist
    if bad == "huge_stamp":
        ns[0] = 2**63
    elif bad == "bool_stamp":
        ns[0] = True
    elif bad == "int_sum":
        hist[3].sum = 1  # an int where the kernel expects a float
    elif bad == "unset_slot":
        del hist[5].max
    elif bad == "other_type":
        histograms = (*hist[:5], object())
    else:
        histograms = hist[:5]
    before = [counter.value, *[(h.count, h.sum, getattr(h, "min", None), getattr(h, "max", None)) for h in hist]]
    assert kernel.observe_request_times(lock, counter, histograms, *ns) is False
    assert [counter.value, *[(h.count, h.sum, getattr(h, "min", None), getattr(h, "max", None)) for h in hist]] == before
    assert not lock.locked()


def test_record_request_ns_is_record_request_times_of_the_times_with_the_kernel_on_or_off() -> None:
    ms = 1_000_000
    stream = [(15 * ms, ms, 3 * ms, 4 * ms, -1, 11 * ms, 12 * ms, 15 * ms), (9 * ms, 0, ms, 2 * ms, 8 * ms, 8 * ms, 8 * ms, -1),
              (30 * ms, 2 * ms, 2 * ms, 3 * ms, -1, 4 * ms, 29 * ms, 30 * ms)]
    expected = BrokerMetrics(MockTime())
    for ns in stream:
        expected.record_request_times("Produce", *request_times_ms(*ns))
    for native in (True, False):
        previous = _native.use_native(native)
        try:
            m = BrokerMetrics(MockTime())
            for ns in stream:
                m.record_request_ns("Produce", *ns)
        finally:
            _native.use_native(previous)
        assert m.snapshot() == expected.snapshot()
