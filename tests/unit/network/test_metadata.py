"""Metadata contract (statements 31-33) and the cluster view."""

from __future__ import annotations

import random

import pytest

from pykafka_client.errors import (
    IllegalArgumentError,
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnsupportedVersionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.metadata import Metadata, oldest_metadata_version
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import MetadataRequest
from tests.doubles.counting_lock import CountingLock
from tests.doubles.mock_selector import MockSelector
from tests.doubles.responses import api_versions_response, metadata_response, nodes
from tests.unit.network.harness import Harness

NODES = nodes(3)


def md(backoff: int = 100, backoff_max: int = 100) -> Metadata:
    m = Metadata(backoff, backoff_max, 10_000, rng=random.Random(1))
    m.bootstrap([("localhost", 9092)])
    return m


def test_bootstrap_nodes_have_negative_ids_and_an_update_is_due() -> None:
    m = md()
    assert [n.id for n in m.fetch().nodes] == [-1]
    assert m.fetch().is_bootstrap_configured
    assert m.time_to_next_update(1000) == 0


def test_cluster_view_after_update() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 2, "b": 1}, cluster_id="c1", controller_id=2), False, 1000)
    c = m.fetch()
    assert {n.id for n in c.nodes} == {0, 1, 2}
    assert c.cluster_id == "c1" and c.controller is not None and c.controller.id == 2
    assert c.topics() == {"a", "b"} and c.partition_count_for_topic("a") == 2
    leader = c.leader_for(("a", 1))
    assert leader is not None and leader.id == 1
    topic_id = c.topic_id("a")
    assert topic_id is not None and c.topic_name(topic_id) == "a"
    assert m.time_to_next_update(1000) == 10_000


def test_s31_requested_update_still_respects_retry_backoff() -> None:
    m = md(backoff=100)
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    m.request_update()
    assert m.update_requested()
    assert m.time_to_next_update(1000) == 100
    assert m.time_to_next_update(1050) == 50
    assert m.time_to_next_update(1100) == 0


def test_s32_failed_update_backs_off_exponentially() -> None:
    m = md(backoff=100, backoff_max=10_000)
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    m.request_update()
    m.failed_update(2000)
    first = m.time_to_next_update(2000)
    assert 80 <= first <= 120
    m.failed_update(2000)
    second = m.time_to_next_update(2000)
    assert 160 <= second <= 240
    m.update(0, metadata_response(NODES, {"a": 1}), False, 3000)
    assert not m.update_requested()


def test_backoff_longer_than_the_expiry_left_still_counts() -> None:
    """The expiry is the answer only when no backoff can outlast it (the I/O thread asks every poll)."""
    m = md(backoff=100, backoff_max=100)
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)  # expires at 11_000
    assert m.time_to_next_update(5000) == 6000
    m.failed_update(10_950)
    assert 70 <= m.time_to_next_update(10_960) <= 110  # the backoff (100 +-20%) less 10 ms, not the 40 ms to expiry


def test_s33_leader_epoch_never_regresses() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 1}, epochs={("a", 0): 10}, leaders={("a", 0): 1}), False, 1000)
    assert m.last_seen_leader_epoch(("a", 0)) == 10
    # An older epoch (a stale broker) is ignored: the cached partition stays.
    m.update(0, metadata_response(NODES, {"a": 1}, epochs={("a", 0): 9}, leaders={("a", 0): 2}), False, 2000)
    cur = m.current_leader(("a", 0))
    assert cur.epoch == 10 and cur.leader is not None and cur.leader.id == 1
    # A newer one is taken.
    m.update(0, metadata_response(NODES, {"a": 1}, epochs={("a", 0): 11}, leaders={("a", 0): 2}), False, 3000)
    cur = m.current_leader(("a", 0))
    assert cur.epoch == 11 and cur.leader is not None and cur.leader.id == 2


def test_s33_out_of_band_higher_epoch_invalidates_cached_leader() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 1}, epochs={("a", 0): 5}), False, 1000)
    assert not m.update_last_seen_epoch_if_newer(("a", 0), 5)
    assert not m.update_last_seen_epoch_if_newer(("a", 0), 4)
    assert not m.update_requested()
    assert m.update_last_seen_epoch_if_newer(("a", 0), 7)
    assert m.update_requested()
    cur = m.current_leader(("a", 0))
    assert cur.leader is None and cur.epoch == 7
    # Metadata with epoch 6 is older than what we saw out of band: still unknown.
    m.update(0, metadata_response(NODES, {"a": 1}, epochs={("a", 0): 6}), False, 2000)
    assert m.current_leader(("a", 0)).leader is None
    m.update(0, metadata_response(NODES, {"a": 1}, epochs={("a", 0): 7}), False, 3000)
    assert m.current_leader(("a", 0)).leader is not None


def test_s33_negative_epoch_rejected() -> None:
    with pytest.raises(ValueError):
        md().update_last_seen_epoch_if_newer(("a", 0), -1)


def test_topic_errors_and_fatal_errors_raised_once() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 1}, topic_errors={"bad!": 17}), False, 1000)
    with pytest.raises(InvalidTopicError):
        m.maybe_throw_any_exception()
    m.maybe_throw_any_exception()
    m.update(0, metadata_response(NODES, {}, topic_errors={"secret": 29}), False, 2000)
    with pytest.raises(TopicAuthorizationFailedError):
        m.maybe_throw_any_exception()
    m.fatal_error(KafkaError("fatal"))
    with pytest.raises(KafkaError, match="fatal"):
        m.maybe_throw_any_exception()
    m.maybe_throw_any_exception()


def test_rebootstrap_returns_to_bootstrap_nodes() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)
    m.rebootstrap()
    assert [n.id for n in m.fetch().nodes] == [-1] and m.update_requested()


def test_partial_update_keeps_other_topics() -> None:
    m = md()
    m.update(0, metadata_response(NODES, {"a": 1, "b": 1}), False, 1000)
    m.update(0, metadata_response(NODES, {"b": 2}), True, 2000)
    assert m.fetch().topics() == {"a", "b"} and m.fetch().partition_count_for_topic("b") == 2


# --- the versions a metadata request may be sent at (an explicit decision, as Java's builder makes) ----


@pytest.mark.parametrize(
    ("topics", "auto_create", "oldest"),
    [
        pytest.param(["t"], True, 0, id="named-topics-auto-create"),
        pytest.param(None, True, 1, id="all-topics-needs-null-list-v1"),
        pytest.param(["t"], False, 4, id="no-auto-create-needs-v4"),
        pytest.param(None, False, 4, id="all-topics-no-auto-create"),
    ],
)
def test_oldest_metadata_version(topics: list[str] | None, auto_create: bool, oldest: int) -> None:
    body = MetadataRequest(
        topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=auto_create,
    )
    assert oldest_metadata_version(body) == oldest
    for version in range(oldest, MetadataRequest.VALID_VERSIONS[1] + 1):
        body.encode(version)
    if oldest > 0:
        with pytest.raises((UnsupportedVersionError, IllegalArgumentError)):
            body.encode(oldest - 1)


def test_metadata_needing_v4_against_a_v3_broker_fails_with_a_clear_fatal_error() -> None:
    """Not an encode error on every poll: the update fails once with UnsupportedVersionError naming the
    versions, which the client raises from poll."""
    h = Harness()
    no_auto_create = Metadata(100, 1000, 300_000, allow_auto_topic_creation=False)
    no_auto_create.bootstrap([("localhost", 9092)])
    client = NetworkClient(h.selector, no_auto_create, time=h.time, host_resolver=lambda host: ["127.0.0.1"])
    versions = api_versions_response({ApiKey.METADATA: (0, 3)})

    def answer(sel: MockSelector) -> None:
        for r in sel.unanswered(api_key=ApiKey.API_VERSIONS):
            sel.respond(r.destination, versions)

    h.selector.on_poll = answer
    for _ in range(5):
        client.poll(100, h.time.hi_res_clock_ms())
    with pytest.raises(UnsupportedVersionError, match="METADATA at versions 0-3, but this request needs a version in 4-"):
        no_auto_create.maybe_throw_any_exception()
    assert ApiKey.METADATA not in {r.api_key for r in h.selector.sent_requests}


def test_the_time_to_the_expiry_is_answered_without_the_lock_and_a_request_is_seen_at_once() -> None:
    """The I/O thread asks time_to_next_update at least twice per iteration: with no update requested and no backoff
    outlasting the expiry (the common case) the answer is the expiry's, without taking the lock; an update requested
    (from any thread) in between is in the very next answer, as is a failed attempt's backoff."""
    m = md(backoff=100, backoff_max=100)
    m.update(0, metadata_response(NODES, {"a": 1}), False, 1000)  # expires at 11_000
    lock = CountingLock()
    m._lock = lock  # type: ignore[assignment]
    assert [m.time_to_next_update(t) for t in (1000, 5000, 10_999)] == [10_000, 6000, 1]
    assert lock.acquired == 0
    assert m.time_to_next_update(11_000) == 0 and m.time_to_next_update(20_000) == 0  # expired: due
    m.update(0, metadata_response(NODES, {"a": 1}), False, 20_000)  # expires at 30_000
    assert m.time_to_next_update(20_050) == 9950
    m.request_update()
    assert m.time_to_next_update(20_050) == 50  # the backoff after the last attempt (20_000), not the expiry
    assert m.time_to_next_update(20_100) == 0
    m.failed_update(20_100)
    assert 80 <= m.time_to_next_update(20_100) <= 120
    m.update(0, metadata_response(NODES, {"a": 1}), False, 29_950)  # expires at 39_950
    before = lock.acquired
    assert m.time_to_next_update(30_000) == 9950 and lock.acquired == before
    m.failed_update(39_900)  # a backoff that outlasts the 50 ms left to the expiry: decided under the lock
    assert 30 <= m.time_to_next_update(39_910) <= 110 and lock.acquired > before
