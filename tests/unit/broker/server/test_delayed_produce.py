"""DelayedProduce: pending partitions start as REQUEST_TIMED_OUT, complete when the HW reaches them."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.server.delayed_produce import DelayedProduce, ProducePartitionStatus
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.server.replica_manager import PartitionResponse, ReplicaManager
from pykafka_client.errors import InvalidTopicError, UnknownTopicOrPartitionError
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.broker.log.helpers import batch

TIMED_OUT = 7


def test_completes_when_every_partition_is_replicated() -> None:
    hw = {"a": 0, "b": 0}
    done: list[dict[Hashable, ProducePartitionStatus]] = []
    statuses: dict[Hashable, ProducePartitionStatus] = {
        "a": ProducePartitionStatus(5, 0, False),
        "b": ProducePartitionStatus(3, 0, False),
        "c": ProducePartitionStatus(0, 3, False),  # failed at append: not pending
    }
    op = DelayedProduce(1000, statuses, lambda tp, off: (hw[str(tp)] >= off, 0), done.append)
    assert statuses["a"].error_code == TIMED_OUT and statuses["a"].acks_pending
    assert not statuses["c"].acks_pending and statuses["c"].error_code == 3
    assert not op.try_complete()
    hw["a"] = 5
    assert not op.try_complete() and not done
    hw["b"] = 3
    assert op.try_complete()
    assert [s.error_code for s in done[0].values()] == [0, 0, 3]
    assert not op.try_complete()  # exactly once


def test_partition_gone_completes_with_its_error() -> None:
    done: list[dict[Hashable, ProducePartitionStatus]] = []
    statuses: dict[Hashable, ProducePartitionStatus] = {"a": ProducePartitionStatus(1, 0, False)}
    op = DelayedProduce(1000, statuses, lambda tp, off: (False, 3), done.append)
    assert op.try_complete()
    assert done[0]["a"].error_code == 3


def test_expiry_answers_request_timed_out() -> None:
    done: list[dict[Hashable, ProducePartitionStatus]] = []
    statuses: dict[Hashable, ProducePartitionStatus] = {"a": ProducePartitionStatus(1, 0, False)}
    op = DelayedProduce(1000, statuses, lambda tp, off: (False, 0), done.append)
    op.run()  # the timer fires
    assert done[0]["a"].error_code == TIMED_OUT


def test_acks_all_on_a_single_broker_answers_without_a_delayed_produce(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    """The high watermark moves with the append on a single broker, so the answer goes out at once and no
    DelayedProduce is built or watched; a partition that failed to append keeps its error."""
    from mini_broker.server import replica_manager as rm_module

    def no_delayed_produce(*args: object, **kwargs: object) -> None:
        raise AssertionError("a single broker's acks=all produce built a DelayedProduce")

    monkeypatch.setattr(rm_module, "DelayedProduce", no_delayed_produce)
    rm = _single_broker(tmp_path)
    try:
        rm.create_topic("t", 1, {})
        answers: list[dict[TopicPartition, PartitionResponse]] = []
        rm.append_records(30_000, -1, [(TopicPartition("t", 0), batch([b"a", b"b"])),
                                       (TopicPartition("missing", 0), batch([b"c"]))], answers.append)
        assert len(answers) == 1
        assert answers[0][TopicPartition("t", 0)].error_code == 0
        assert answers[0][TopicPartition("t", 0)].base_offset == 0
        assert answers[0][TopicPartition("missing", 0)].error_code == UnknownTopicOrPartitionError.code
        assert rm.produce_purgatory.watched == 0
    finally:
        rm.shutdown()


def test_appends_skip_the_purgatories_until_one_watched_then_complete_a_parked_fetch(tmp_path: Path) -> None:
    """Appends ask the purgatories nothing while neither ever watched an operation; once a fetch is parked on a
    partition, the next append there completes it (the check is back)."""
    from mini_broker.purgatory import FetchParams
    from mini_broker.server.replication_strategy import FetchPartitionInfo

    rm = _single_broker(tmp_path)
    try:
        rm.create_topic("t", 1, {})
        tp = TopicPartition("t", 0)
        answers: list[dict[TopicPartition, PartitionResponse]] = []
        rm.append_records(30_000, 1, [(tp, batch([b"a"]))], answers.append)
        assert not rm.fetch_purgatory.has_watched and not rm.produce_purgatory.has_watched
        fetched: list[object] = []
        rm.fetch_messages(FetchParams(max_wait_ms=30_000, min_bytes=1, max_bytes=1 << 20),
                          [(tp, FetchPartitionInfo(1, 1 << 20))], fetched.append)
        assert not fetched and rm.fetch_purgatory.has_watched
        rm.append_records(30_000, 1, [(tp, batch([b"b"]))], answers.append)
        assert len(fetched) == 1 and [a[tp].base_offset for a in answers] == [0, 1]
    finally:
        rm.shutdown()


def test_topic_name_checks_hold_after_appends_that_passed_them(tmp_path: Path) -> None:
    """A client append checks the topic name once per topic (valid, not internal): after a client append to a
    topic succeeded, and after the coordinator appended to an internal topic, a client is still refused the
    internal topic and an illegal name."""
    from mini_broker.log.unified_log import AppendOrigin

    rm = _single_broker(tmp_path)
    try:
        rm.create_topic("t", 1, {})
        rm.create_topic("__consumer_offsets", 1, {})
        answers: list[dict[TopicPartition, PartitionResponse]] = []
        internal = TopicPartition("__consumer_offsets", 0)
        rm.append_records(30_000, 1, [(internal, batch([b"x"]))], answers.append, origin=AppendOrigin.COORDINATOR)
        for _ in range(2):
            rm.append_records(30_000, 1, [(TopicPartition("t", 0), batch([b"a"])), (internal, batch([b"b"])),
                                          (TopicPartition("bad name", 0), batch([b"c"]))], answers.append)
        assert answers[0][internal].error_code == 0
        for answer in answers[1:]:
            assert answer[TopicPartition("t", 0)].error_code == 0
            assert answer[internal].error_code == InvalidTopicError.code
            assert answer[internal].error_message == "Cannot append to internal topic __consumer_offsets"
            assert answer[TopicPartition("bad name", 0)].error_code == InvalidTopicError.code
        assert [a[TopicPartition("t", 0)].base_offset for a in answers[1:]] == [0, 1]
    finally:
        rm.shutdown()


def _single_broker(tmp_path: Path) -> ReplicaManager:
    d = str(tmp_path)
    rm = ReplicaManager(KafkaConfig({"log.dirs": d}), MetadataCache(d, 0), d, time=MockTime())
    rm.startup()
    return rm
