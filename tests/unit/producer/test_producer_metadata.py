from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykafka_client.producer.producer_metadata import ProducerMetadata
from pykafka_client.structs import TopicPartition
from tests.doubles.counting_lock import CountingLock
from tests.doubles.responses import metadata_response, nodes


def test_full_update_names_producer_topics_and_clears_the_request() -> None:
    md = ProducerMetadata(100, 1000)
    md.add("a", 0)
    md.add("b", 0)
    body, partial = md.new_metadata_request()
    assert partial and sorted(str(t.name) for t in body.topics or []) == ["a", "b"]
    md.update(0, metadata_response(nodes(1), {"a": 1, "b": 2}), partial, 10)
    assert not md.update_requested()
    md.request_update()
    body, partial = md.new_metadata_request()
    assert not partial and sorted(str(t.name) for t in body.topics or []) == ["a", "b"]
    md.update(0, metadata_response(nodes(1), {"a": 1, "b": 2}), partial, 20)
    assert not md.update_requested()
    assert md.time_to_next_update(21) > 0


def test_new_topic_is_a_partial_update_keeping_others() -> None:
    md = ProducerMetadata(100, 1000)
    md.add("a", 0)
    md.update(0, metadata_response(nodes(1), {"a": 3}), False, 10)
    md.add("c", 10)
    body, partial = md.new_metadata_request()
    assert partial and [t.name for t in body.topics or []] == ["c"]
    md.update(0, metadata_response(nodes(1), {"c": 1}), True, 20)
    assert md.partition_count_for_topic("a") == 3 and md.partition_count_for_topic("c") == 1
    assert list(md.partitions_for_node(0)) == [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("c", 0)]


def test_idle_topics_expire() -> None:
    md = ProducerMetadata(100, 1000, metadata_idle_ms=5000)
    md.add("a", 0)
    md.retain_topics(4999)
    assert md.contains_topic("a")
    md.retain_topics(5000)
    assert not md.contains_topic("a")


def test_leader_hint_applies_only_newer_epochs() -> None:
    brokers = nodes(2)
    md = ProducerMetadata(100, 1000)
    md.add("a", 0)
    md.update(0, metadata_response(brokers, {"a": 1}, leaders={("a", 0): 0}, leader_epoch=3), False, 10)
    assert md.update_partition_leadership({("a", 0): (1, 3)}, []) == set()
    assert md.update_partition_leadership({("a", 0): (1, 4)}, []) == {("a", 0)}
    leader, epoch = md.leader_and_epoch(("a", 0))
    assert leader is not None and leader.id == 1 and epoch == 4
    assert md.update_partition_leadership({("a", 0): (9, 5)}, []) == set()  # unknown node


def test_a_snapshot_is_the_cluster_it_was_taken_of_with_the_epochs_seen_since() -> None:
    """fetch_metadata_snapshot(): the lookups of the current cluster, one object until the cluster changes; a newer
    epoch seen out of band hides the leader in a snapshot taken before it, as in the metadata's own lookups."""
    brokers = nodes(2)
    md = ProducerMetadata(100, 1000)
    md.add("a", 0)
    md.update(0, metadata_response(brokers, {"a": 2}, leaders={("a", 0): 0, ("a", 1): 1}, leader_epoch=3), False, 10)
    snap = md.fetch_metadata_snapshot()
    assert md.fetch_metadata_snapshot() is snap
    assert snap.partition_count_for_topic("a") == 2 and list(snap.available_partitions_for_topic("a")) == [0, 1]
    assert list(snap.partitions_for_node(1)) == [TopicPartition("a", 1)]
    leader, epoch = snap.leader_and_epoch(("a", 0))
    assert leader is not None and leader.id == 0 and epoch == 3
    assert md.update_last_seen_epoch_if_newer(("a", 0), 4)
    assert snap.leader_and_epoch(("a", 0)) == (None, 4) == md.leader_and_epoch(("a", 0))
    md.update_partition_leadership({("a", 1): (0, 5)}, [])
    later = md.fetch_metadata_snapshot()
    assert later is not snap and list(later.partitions_for_node(0)) == [TopicPartition("a", 0), TopicPartition("a", 1)]
    assert list(snap.partitions_for_node(0)) == [TopicPartition("a", 0)]  # a snapshot never changes


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "retain"]), st.sampled_from("abc"), st.integers(0, 12_000)), max_size=40))
def test_retain_topics_forgets_exactly_the_idle_topics_whatever_the_order_of_adds(
    ops: list[tuple[str, str, int]],
) -> None:
    """retain_topics skips its look at the topics until the earliest expiry it last saw (lowered by add, whose
    time may be behind the Sender's: another thread's clock): the topics kept are always those of the plain rule
    (an expiry past now; add refreshes an expiry only when less than half the idle time is left)."""
    idle = 5000
    md = ProducerMetadata(100, 1000, metadata_idle_ms=idle)
    model: dict[str, int] = {}
    for op, topic, now in ops:
        if op == "add":
            md.add(topic, now)
            if topic not in model or model[topic] - now <= idle // 2:
                model[topic] = now + idle
        else:
            md.retain_topics(now)
            model = {t: e for t, e in model.items() if e > now}
        assert md.topic_expiry == model


def test_retain_topics_takes_no_lock_before_the_earliest_expiry() -> None:
    """The Sender calls retain_topics every iteration: before the earliest expiry it last saw there is nothing to
    forget, and it neither locks nor looks at the topics; at that time it forgets the topic."""
    md = ProducerMetadata(100, 1000, metadata_idle_ms=5000)
    md.add("a", 0)
    md.add("b", 1000)
    lock = CountingLock()
    md._lock = lock  # type: ignore[assignment]
    acquired = lock.acquired  # (the adds made the earliest expiry a's, 5000; b's is 6000)
    for now in (1, 100, 4999):
        md.retain_topics(now)
    assert lock.acquired == acquired and md.contains_topic("a") and md.contains_topic("b")
    md.retain_topics(5000)
    assert not md.contains_topic("a") and md.contains_topic("b")
    md.retain_topics(5999)
    assert md.contains_topic("b") and lock.acquired == acquired + 1
    md.retain_topics(6000)
    assert not md.contains_topic("b")


def test_retain_topics_and_fetch_snapshot_is_retain_topics_then_fetch_metadata_snapshot() -> None:
    """The Sender's one metadata call per iteration: idle topics forgotten when due (not before), and the snapshot of
    the current cluster (the same object until it changes); a TopicPartition or a plain tuple looks up alike."""
    brokers = nodes(2)
    md = ProducerMetadata(100, 1000, metadata_idle_ms=5000)
    md.add("a", 0)
    md.add("b", 3000)
    md.update(
        0, metadata_response(brokers, {"a": 1, "b": 1}, leaders={("a", 0): 1, ("b", 0): 0}, leader_epoch=2), False, 10
    )
    snap = md.retain_topics_and_fetch_snapshot(4999)
    assert snap is md.fetch_metadata_snapshot() and md.contains_topic("a") and md.contains_topic("b")
    assert md.retain_topics_and_fetch_snapshot(5000) is snap
    assert not md.contains_topic("a") and md.contains_topic("b")
    assert snap.leader_and_epoch(TopicPartition("a", 0)) == snap.leader_and_epoch(("a", 0))
    leader, epoch = snap.leader_and_epoch(TopicPartition("a", 0))
    assert leader is not None and leader.id == 1 and epoch == 2
    md.update(0, metadata_response(brokers, {"b": 1}, leaders={("b", 0): 1}, leader_epoch=3), False, 5001)
    later = md.retain_topics_and_fetch_snapshot(5001)
    assert later is not snap and later is md.fetch_metadata_snapshot()
    assert list(later.partitions_for_node(1)) == [TopicPartition("b", 0)]
    assert md.retain_topics_and_fetch_snapshot(8000) is later and not md.contains_topic("b")
