"""Metadata contract (statements 31-33) and the cluster view."""

from __future__ import annotations

import random

import pytest

from pykafka_client.errors import InvalidTopicError, TopicAuthorizationFailedError
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.metadata import Metadata
from tests.doubles.responses import metadata_response, nodes

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
    assert c.topic_id("a") is not None and c.topic_name(c.topic_id("a")) == "a"
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
