"""A cluster broker's ReplicaManager with an in-process controller and MockTime (no sockets, no threads):
acks=all through DelayedProduce completed by follower fetches, min.insync.replicas, the high watermark as the
consumers' limit, ISR expansion via AlterPartition, fencing by leader epoch, and follower truncation."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.cluster.controller import handle_request
from mini_broker.cluster.controller_rpc import ControllerChannel, raise_reply_error
from mini_broker.cluster.controller_state import ControllerState
from mini_broker.cluster.replication import ClusterReplication
from mini_broker.config import KafkaConfig
from mini_broker.log.log_offset_metadata import FetchIsolation
from mini_broker.purgatory import FetchParams
from mini_broker.server.metadata_cache import MetadataCache
from mini_broker.server.replica_manager import LogReadResult, PartitionResponse, ReplicaManager
from mini_broker.server.replication_strategy import FetchPartitionInfo
from pykafka_client.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    RequestTimedOutError,
)
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.unit.broker.log.helpers import batch

TP = TopicPartition("t", 0)


class InProcessChannel(ControllerChannel):
    def __init__(self, state: ControllerState) -> None:
        super().__init__("127.0.0.1", 1)
        self.state = state
        self.calls: list[dict[str, Any]] = []

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(msg)
        try:
            reply = handle_request(self.state, msg)
        except Exception as e:
            reply = {"error": getattr(e, "code", -1), "message": str(e)}
        raise_reply_error(reply)
        return reply


class Harness:
    def __init__(self, tmp_path: Path, min_isr: int = 1, isr: list[int] | None = None) -> None:
        self.time = MockTime()
        self.state = ControllerState("c1", self.time, 2000)
        self.epochs = {i: self.state.register_broker(i, "127.0.0.1", 9000 + i) for i in range(3)}
        self.state.create_topic("t", 1, 3, {"min.insync.replicas": str(min_isr)})
        if isr is not None:
            self.state.alter_partition(0, self.epochs[0], "t", 0, 0, 0, isr)
        d = str(tmp_path)
        config = KafkaConfig({"log.dirs": d, "node.id": 0, "controller.quorum.bootstrap.servers": "127.0.0.1:1"})
        self.cache = MetadataCache(d, 0, "c1")
        self.rm = ReplicaManager(config, self.cache, d, time=self.time)
        self.cluster = ClusterReplication(self.rm, self.cache, 0, "127.0.0.1:1", d, self.time)
        self.channel = InProcessChannel(self.state)
        self.cluster.channel = self.cluster.forwarding_channel = self.channel
        self.cluster.broker_epoch = self.epochs[0]
        self.rm.replication = self.cluster
        self.rm.startup()
        self.cluster.apply_image(self.state.image())

    def produce(self, acks: int, n: int = 1, timeout_ms: int = 30000) -> list[dict[TopicPartition, PartitionResponse]]:
        out: list[dict[TopicPartition, PartitionResponse]] = []
        self.rm.append_records(timeout_ms, acks, [(TP, batch([b"v%d" % i for i in range(n)]))], out.append)
        return out

    def follower_fetch(self, replica_id: int, offset: int, epoch: int = 0) -> list[tuple[TopicPartition, LogReadResult]]:
        out: list[list[tuple[TopicPartition, LogReadResult]]] = []
        params = FetchParams(0, 1, 1 << 20, FetchIsolation.LOG_END, replica_id)
        self.rm.fetch_messages(params, [(TP, FetchPartitionInfo(offset, 1 << 20, epoch))], out.append)
        return out[0]

    def consumer_fetch(self, offset: int, max_wait_ms: int = 0) -> list[list[tuple[TopicPartition, LogReadResult]]]:
        out: list[list[tuple[TopicPartition, LogReadResult]]] = []
        params = FetchParams(max_wait_ms, 1, 1 << 20, FetchIsolation.HIGH_WATERMARK)
        self.rm.fetch_messages(params, [(TP, FetchPartitionInfo(offset, 1 << 20))], out.append)
        return out

    @property
    def log_end(self) -> int:
        lg = self.rm.log_manager.get_log("t", 0)
        assert lg is not None
        return lg.log_end_offset

    @property
    def hw(self) -> int:
        lg = self.rm.log_manager.get_log("t", 0)
        assert lg is not None
        return lg.high_watermark


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path)
    yield harness
    harness.rm.shutdown()


def test_acks_all_waits_in_the_purgatory_until_every_isr_follower_fetched_past_it(h: Harness) -> None:
    done = h.produce(-1, n=3)
    assert done == [] and h.rm.produce_purgatory.watched >= 1
    assert h.hw == 0
    h.follower_fetch(1, 3)
    assert done == [] and h.hw == 0  # follower 2 has not fetched yet
    h.follower_fetch(2, 3)
    assert h.hw == 3
    assert len(done) == 1 and done[0][TP].error_code == 0 and done[0][TP].base_offset == 0


def test_acks_all_times_out_when_followers_never_fetch(h: Harness) -> None:
    done = h.produce(-1, timeout_ms=100)
    assert done == []
    h.time.sleep(200)
    deadline = time.monotonic() + 30
    while not done and time.monotonic() < deadline:  # expiry runs on the timer's executor thread
        h.rm.produce_purgatory.advance_clock(10)
    assert done[0][TP].error_code == RequestTimedOutError.code


def test_acks_1_answers_at_once_and_consumers_do_not_see_past_the_high_watermark(h: Harness) -> None:
    done = h.produce(1, n=2)
    assert done[0][TP].error_code == 0
    (_, res), = h.consumer_fetch(0)[0]
    assert res.high_watermark == 0 and res.records_size == 0
    h.follower_fetch(1, 2)
    h.follower_fetch(2, 2)
    (_, res), = h.consumer_fetch(0)[0]
    assert res.high_watermark == 2 and res.records_size > 0


def test_a_waiting_consumer_fetch_completes_when_the_high_watermark_moves(h: Harness) -> None:
    h.produce(1, n=1)
    waiting = h.consumer_fetch(0, max_wait_ms=30000)
    assert waiting == []
    h.follower_fetch(1, 1)
    assert waiting == []
    h.follower_fetch(2, 1)
    assert len(waiting) == 1 and waiting[0][0][1].records_size > 0


def test_acks_all_is_refused_when_the_isr_is_below_min_insync_replicas(tmp_path: Path) -> None:
    h = Harness(tmp_path, min_isr=2, isr=[0])
    try:
        assert h.produce(-1)[0][TP].error_code == NotEnoughReplicasError.code
        assert h.log_end == 0  # nothing appended
        assert h.produce(1)[0][TP].error_code == 0  # acks=1 still succeeds
    finally:
        h.rm.shutdown()


def test_isr_shrinking_during_the_wait_answers_not_enough_replicas_after_append(tmp_path: Path) -> None:
    h = Harness(tmp_path, min_isr=2, isr=[0, 1])
    try:
        done = h.produce(-1)
        assert done == []
        # follower 1 falls out of the ISR (controller image), then the HW reaches the offset
        h.state.alter_partition(0, h.epochs[0], "t", 0, 0, 1, [0])
        h.cluster.apply_image(h.state.image())
        assert done[0][TP].error_code == NotEnoughReplicasAfterAppendError.code
    finally:
        h.rm.shutdown()


def test_a_caught_up_follower_is_added_to_the_isr_through_the_controller(tmp_path: Path) -> None:
    h = Harness(tmp_path, isr=[0, 1])
    try:
        h.produce(1, n=4)
        h.follower_fetch(1, 4)
        assert h.hw == 4
        h.follower_fetch(2, 2)
        assert h.state.topics["t"].partitions[0].isr == [0, 1]
        h.follower_fetch(2, 4)
        assert h.state.topics["t"].partitions[0].isr == [0, 1]  # queued: the fetch does not wait for it
        h.cluster.send_isr_changes()
        assert h.state.topics["t"].partitions[0].isr == [0, 1, 2]
        assert any(c["op"] == "alter_partitions" for c in h.channel.calls)
    finally:
        h.rm.shutdown()


def test_a_fetch_catching_a_follower_up_on_many_partitions_sends_one_alter_partition(tmp_path: Path) -> None:
    """After a restart one follower fetch catches up on many partitions: the ISR proposals are queued and go
    to the controller in one request, one controller change (one image) for all of them, and the fetch itself
    never waits for the controller (it held a request handler per partition's round trip)."""
    h = Harness(tmp_path, isr=[0, 1])
    try:
        others = [TopicPartition(f"u{i}", 0) for i in range(5)]
        for tp in others:
            h.state.create_topic(tp.topic, 1, 3, {})
            h.state.alter_partition(0, h.epochs[0], tp.topic, 0, 0, 0, [0, 1])
        h.cluster.apply_image(h.state.image())
        params = FetchParams(0, 1, 1 << 20, FetchIsolation.LOG_END, 2)
        h.rm.fetch_messages(params, [(tp, FetchPartitionInfo(0, 1 << 20, 0)) for tp in [TP, *others]],
                            lambda _: None)
        assert h.channel.calls == []
        version = h.state.version
        h.cluster.send_isr_changes()
        assert [c["op"] for c in h.channel.calls] == ["alter_partitions"]
        assert len(h.channel.calls[0]["partitions"]) == 6
        assert h.state.version == version + 1
        assert all(h.state.topics[tp.topic].partitions[0].isr == [0, 1, 2] for tp in [TP, *others])
        assert h.cluster.partition(others[0]) is not None
        assert h.cluster.partition(others[0]).isr == [0, 1, 2]  # type: ignore[union-attr]
    finally:
        h.rm.shutdown()


def test_a_refused_isr_proposal_is_dropped_and_the_others_are_applied(tmp_path: Path) -> None:
    h = Harness(tmp_path, isr=[0, 1])
    try:
        h.state.create_topic("u", 1, 3, {})
        h.state.alter_partition(0, h.epochs[0], "u", 0, 0, 0, [0, 1])
        h.cluster.apply_image(h.state.image())
        params = FetchParams(0, 1, 1 << 20, FetchIsolation.LOG_END, 2)
        h.rm.fetch_messages(params, [(tp, FetchPartitionInfo(0, 1 << 20, 0))
                                     for tp in (TP, TopicPartition("u", 0))], lambda _: None)
        h.state.alter_partition(0, h.epochs[0], "u", 0, 0, 1, [0])  # "u" moved on: the queued epoch is stale
        h.cluster.send_isr_changes()
        assert h.state.topics["t"].partitions[0].isr == [0, 1, 2]
        assert h.state.topics["u"].partitions[0].isr == [0]
        part = h.cluster.partition(TopicPartition("u", 0))
        assert part is not None and part.pending_isr is None  # proposed again by a later fetch
    finally:
        h.rm.shutdown()


def test_stale_epochs_and_lost_leadership_are_refused(h: Harness) -> None:
    h.state.register_broker(0, "127.0.0.1", 9000)  # this broker restarted: leadership moves to broker 1
    h.cluster.apply_image(h.state.image())
    assert h.produce(1)[0][TP].error_code == NotLeaderOrFollowerError.code
    (_, res), = h.follower_fetch(2, 0, epoch=0)
    assert res.error_code == FencedLeaderEpochError.code


def test_batches_carry_the_leader_epoch_and_a_follower_truncates_a_divergent_tail(h: Harness) -> None:
    h.produce(1)
    h.produce(1)
    lg = h.rm.log_manager.get_log("t", 0)
    assert lg is not None and lg.leader_epoch_cache().entries() == [(0, 0)]
    # the leader epoch moves (broker 0 leads again at epoch 2 after 1 took over and gave back)
    h.state.register_broker(0, "127.0.0.1", 9000)
    h.state.register_broker(1, "127.0.0.1", 9001)
    h.cluster.apply_image(h.state.image())
    reg = h.state.topics["t"].partitions[0]
    assert reg.leader == 2  # broker 2 leads; this broker (0) is a follower with an unreplicated tail
    lg = h.rm.log_manager.get_log("t", 0)
    assert lg is not None and lg.log_end_offset == 2
    new = h.rm.log_manager.truncate_to("t", 0, 1)
    assert new.log_end_offset == 1 and new.leader_epoch_cache().entries() == [(0, 0)]
    (_, res), = h.consumer_fetch(0)[0]
    assert res.error_code == NotLeaderOrFollowerError.code  # consumers read from leaders only


def test_a_waiting_consumer_fetch_completes_at_once_when_leadership_moves(h: Harness) -> None:
    waiting = h.consumer_fetch(0, max_wait_ms=30000)
    assert waiting == []
    h.state.register_broker(0, "127.0.0.1", 9000)  # leadership moves away from this broker
    h.cluster.apply_image(h.state.image())
    assert len(waiting) == 1 and waiting[0][0][1].error_code == NotLeaderOrFollowerError.code


def test_the_high_watermark_comes_back_from_its_checkpoint_not_from_the_log_end(tmp_path: Path) -> None:
    first = Harness(tmp_path)
    first.produce(1, n=3)
    first.follower_fetch(1, 2)
    first.follower_fetch(2, 2)
    assert (first.hw, first.log_end) == (2, 3)
    first.cluster.write_hw_checkpoint()
    first.rm.shutdown()
    again = Harness(tmp_path)  # the broker restarts on the same data directory
    try:
        assert (again.hw, again.log_end) == (2, 3)
        (_, res), = again.consumer_fetch(0)[0]
        assert res.high_watermark == 2
    finally:
        again.rm.shutdown()


def _list_offsets(h: Harness, timestamp: int, client_request: bool = True) -> tuple[int, int, int]:
    return h.rm.fetch_offset_for_timestamp(TP, timestamp, 0, client_request=client_request)


def test_a_new_leader_behind_its_epochs_start_answers_offset_not_available_until_its_high_watermark_gets_there(
        h: Harness) -> None:
    """KIP-207: a leader elected with records above its high watermark cannot answer the latest offset (it may
    be lower than one a consumer saw from the old leader) until the followers caught up to its epoch's start."""
    h.produce(1, n=3)  # this broker's log ends at 3, its high watermark stays at 0 (no follower fetched)
    h.state.register_broker(0, "127.0.0.1", 9000)  # broker 0 restarted: broker 1 leads, 0 leaves the ISR
    reg = h.state.partition_registration("t", 0)
    assert reg is not None and reg.leader == 1
    broker1_epoch = h.state.broker_registrations()[1].broker_epoch
    h.state.alter_partition(1, broker1_epoch, "t", 0, reg.leader_epoch, reg.partition_epoch, [0, 1, 2])
    assert h.state.elect_leaders(False, [("t", 0)]) == {("t", 0): None}  # back to the preferred replica, 0
    h.cluster.apply_image(h.state.image())
    assert (h.hw, h.log_end) == (0, 3)
    with pytest.raises(OffsetNotAvailableError, match="behind the start of that epoch"):
        _list_offsets(h, -1)
    with pytest.raises(OffsetNotAvailableError):
        _list_offsets(h, 0)  # no record at or after timestamp 0 below the high watermark
    assert _list_offsets(h, -2)[1] == 0  # the earliest offset is always known
    assert _list_offsets(h, -1, client_request=False)[1] == 0  # a follower or a debugging replica is answered
    epoch = h.state.partition_registration("t", 0).leader_epoch  # type: ignore[union-attr]
    h.follower_fetch(1, 3, epoch)
    h.follower_fetch(2, 3, epoch)
    assert h.hw == 3
    assert _list_offsets(h, -1)[1] == 3
