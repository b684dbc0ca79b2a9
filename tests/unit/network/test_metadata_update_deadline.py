"""Metadata.no_update_before_ms, the deadline the NetworkClient reads instead of asking its metadata updater.

Before the deadline: no update is due (time_to_next_update is the time to it), none is requested or attempted
(no rebootstrap can be due); whatever changes those answers moves the deadline back to UPDATE_MAY_BE_DUE.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.network.metadata import UPDATE_MAY_BE_DUE, Metadata
from pykafka_client.network.metadata_updater import (
    DefaultMetadataUpdater,
    ManualMetadataUpdater,
    MetadataRecoveryStrategy,
)
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.producer.producer_metadata import ProducerMetadata
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_selector import MockSelector
from tests.doubles.responses import metadata_response, nodes
from tests.unit.network.harness import Harness

NODES = nodes(3)
EXPIRE_MS = 10_000


def md(backoff: int = 100, backoff_max: int = 1000) -> Metadata:
    m = Metadata(backoff, backoff_max, EXPIRE_MS, rng=random.Random(1))
    m.bootstrap([("localhost", 9092)])
    return m


def test_a_successful_update_sets_the_deadline_to_its_expiry_and_requests_reset_it() -> None:
    m = md()
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE  # bootstrapped: a full update is requested
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    assert m.no_update_before_ms == 1000 + EXPIRE_MS
    assert m.time_to_next_update(4000) == m.no_update_before_ms - 4000
    m.request_update()
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE
    m.update(0, metadata_response(NODES, {"a": 1}), False, 2000)
    m.request_update_for_new_topics()
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE


def test_a_partial_update_with_a_full_one_requested_keeps_the_deadline_reset() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    m.request_update()
    m.update(0, metadata_response(NODES, {"a": 1}), True, 1100)  # partial: the full update is still due
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE
    assert m.time_to_next_update(1100) > 0 and m.update_requested()


def test_a_backoff_that_can_outlast_the_expiry_keeps_the_deadline_reset() -> None:
    m = Metadata(100, 20_000, EXPIRE_MS, rng=random.Random(1))  # retry.backoff.max.ms beyond metadata.max.age.ms
    m.bootstrap([("localhost", 9092)])
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE


def test_failed_attempted_out_of_band_epoch_and_rebootstrap_reset_the_deadline() -> None:
    changes: tuple[Callable[[Metadata], object], ...] = (
        lambda m: m.failed_update(2000),
        lambda m: m.attempt_started(2000),
        lambda m: m.update_last_seen_epoch_if_newer(("a", 0), 5),
        lambda m: m.rebootstrap(),
    )
    for change in changes:
        m = md()
        m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
        assert m.no_update_before_ms == 1000 + EXPIRE_MS
        change(m)
        assert m.no_update_before_ms == UPDATE_MAY_BE_DUE


def test_the_producer_metadata_resets_the_deadline_for_a_new_topic_and_a_topic_update() -> None:
    m = ProducerMetadata(100, 1000, EXPIRE_MS, rng=random.Random(1))
    m.bootstrap([("localhost", 9092)])
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    assert m.no_update_before_ms == 1000 + EXPIRE_MS
    m.add("new-topic", 1500)
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE and m.update_requested()
    m.update(0, metadata_response(NODES, {"a": 1, "new-topic": 1}), False, 2000)
    assert m.no_update_before_ms == 2000 + EXPIRE_MS
    m.request_update_for_topic("a")
    assert m.no_update_before_ms == UPDATE_MAY_BE_DUE


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["update", "partial", "request", "request_new", "failed", "attempt", "epoch", "rebootstrap"]),
        st.integers(0, 3_000),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(_OPS, st.integers(0, 30_000))
def test_before_the_deadline_nothing_is_due_requested_or_attempted(ops: list[tuple[str, int]], probe: int) -> None:
    """The deadline's contract after any sequence of changes: at every time before it, time_to_next_update is the
    time to it, no update is requested and no attempt runs (what lets the NetworkClient skip its questions)."""
    m = md()
    now = 0
    epoch = 0
    for op, step in ops:
        now += step
        if op == "update":
            m.update(0, metadata_response(NODES, {"a": 1}), False, now)
        elif op == "partial":
            m.update(0, metadata_response(NODES, {"a": 1}), True, now)
        elif op == "request":
            m.request_update()
        elif op == "request_new":
            m.request_update_for_new_topics()
        elif op == "failed":
            m.failed_update(now)
        elif op == "attempt":
            m.attempt_started(now)
        elif op == "epoch":
            epoch += 1
            m.update_last_seen_epoch_if_newer(("a", 0), epoch)
        else:
            m.rebootstrap()
    at = now + probe
    if at < m.no_update_before_ms:
        assert m.time_to_next_update(at) == m.no_update_before_ms - at
        assert not m.update_requested()
        assert m.attempt_start_ms is None and not m.needs_rebootstrap(at, 0)
    else:
        assert m.no_update_before_ms <= at


def test_the_updaters_deadlines() -> None:
    m = md()
    updater = DefaultMetadataUpdater(
        m, NetworkClient(MockSelector(MockTime()), m), 30_000, 50, MetadataRecoveryStrategy.NONE
    )
    assert updater.update_deadline is m
    manual = ManualMetadataUpdater(NODES)
    assert manual.update_deadline.no_update_before_ms >= 2**62  # never due
    assert not manual.is_update_due(0) and not manual.needs_rebootstrap(2**40, 0)


def test_ready_sees_an_update_requested_after_the_metadata_arrived_and_the_next_poll_sends_it() -> None:
    """ready() and poll() read the deadline: an update requested between two polls (as another thread would) makes
    the node not ready at once (the metadata request goes first) and the next poll sends it."""
    h = Harness()
    h.await_ready()
    assert h.metadata.no_update_before_ms > h.now  # ready() and poll() answer from the deadline
    assert h.client.ready(h.node, h.now)
    h.time.sleep(1000)
    h.metadata.request_update()
    assert not h.client.ready(h.node, h.now)
    h.poll()
    assert h.selector.unanswered(api_key=ApiKey.METADATA)


def test_the_poll_is_bounded_by_the_deadline() -> None:
    h = Harness(request_timeout_ms=60_000)
    h.await_ready()
    h.metadata.update(0, metadata_response(h.nodes, {"t": 3}), False, h.now - 299_000)  # expires in 1000 ms
    assert h.metadata.no_update_before_ms == h.now + 1000
    h.client.poll(10_000, h.now)
    assert h.selector.poll_timeouts[-1] == 1000
    h.time.sleep(1000)  # expired: the poll asks the updater, which sends the update
    h.poll()
    assert h.selector.unanswered(api_key=ApiKey.METADATA)
