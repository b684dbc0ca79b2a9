"""The partition side of transactions on the wire against a real MiniBroker (broker contract 1.9-1.11):
transactional batches (verified through the TransactionVerifier seam), COMMIT/ABORT markers through
WriteTxnMarkers, Fetch read_committed capped at the LSO with aborted_transactions, ListOffsets LSO, a waiting
read_committed fetch woken by a marker, TxnOffsetCommit pending until its marker, DescribeProducers, and the
LSO / aborted-transaction index after a kill -9. No transaction coordinator is needed: a verifier double
stands in for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.admin import AdminClient
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from pykafka_client.structs import TopicPartition
from tests.integration.broker.permissive_txn_broker import AcceptAll
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

NOW_MS = int(time.time() * 1000)
A, B = 5001, 5002
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
UNSTABLE_OFFSET_COMMIT = 88


def txn_batch(pid: int, seq: int, n: int, epoch: int = 0, prefix: bytes = b"v") -> bytes:
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        assert b.try_append(NOW_MS, None, prefix + b"%d" % (seq + i), [], None, 0) is not None
    b.set_producer_state(pid, epoch, seq, True)
    return b.records()


def produce(conn: Conn, topic: str, records: bytes, transactional_id: str | None = "tx") -> Any:
    req = ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=records)])])
    return conn.call(req, 9).responses[0].partition_responses[0]


def markers(conn: Conn, pid: int, commit: bool, topics: Mapping[str, Sequence[int]], coordinator_epoch: int = 0,
            epoch: int = 0) -> dict[tuple[str, int], int]:
    req = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=list(ps))
                for t, ps in topics.items()])])
    resp = conn.call(req, 1)
    return {(t.name, p.partition_index): p.error_code for m in resp.markers for t in m.topics for p in t.partitions}


def fetch(conn: Conn, topic: str, offset: int, isolation: int = 1, max_wait: int = 0) -> Any:
    req = FetchRequest(max_wait_ms=max_wait, min_bytes=1, max_bytes=1 << 20, isolation_level=isolation,
                       topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                           partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    return conn.call(req, 12).responses[0].partitions[0]


def latest(conn: Conn, topic: str, isolation: int) -> int:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    return int(conn.call(req, 7).topics[0].partitions[0].offset)


def aborted(pd: Any) -> list[tuple[int, int]] | None:
    if pd.aborted_transactions is None:
        return None
    return [(a.producer_id, a.first_offset) for a in pd.aborted_transactions]


def record_offsets(pd: Any) -> list[int]:
    from pykafka_client.protocol.records.memory_records import MemoryRecords

    out: list[int] = []
    raw = pd.records if isinstance(pd.records, (bytes, bytearray)) else bytes(pd.records or b"")
    for batch in MemoryRecords(raw).batches():
        if not batch.is_control:
            out += [r.offset for r in batch.records()]
    return out


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    with MiniBroker(data_dir=str(tmp_path), num_network_threads=1, num_io_threads=2,
                    group_initial_rebalance_delay_ms=0) as b:
        assert b.replica_manager is not None and b.context is not None
        b.replica_manager.create_topic("t", 1, {})
        b.context.transaction_verifier = AcceptAll()
        yield b


def test_read_committed_lso_aborted_transactions_and_markers(broker: MiniBroker) -> None:
    assert broker.context is not None
    verifier = broker.context.transaction_verifier
    assert isinstance(verifier, AcceptAll)
    with Conn(broker) as c:
        assert produce(c, "t", txn_batch(A, 0, 2, prefix=b"a")).error_code == 0  # 0-1
        assert produce(c, "t", txn_batch(B, 0, 2, prefix=b"b")).error_code == 0  # 2-3
        assert produce(c, "t", txn_batch(A, 2, 1, prefix=b"a")).error_code == 0  # 4: A's txn already open
        assert [(pid, [tp.partition for tp in tps]) for _, pid, _, tps in verifier.calls] == [(A, [0]), (B, [0])]
        pd = fetch(c, "t", 0)
        assert (pd.high_watermark, pd.last_stable_offset) == (5, 0)
        assert record_offsets(pd) == [] and aborted(pd) == []
        assert aborted(fetch(c, "t", 0, isolation=0)) is None  # read_uncommitted: null
        assert fetch(c, "t", 0, isolation=0).last_stable_offset == 0
        assert (latest(c, "t", 1), latest(c, "t", 0)) == (0, 5)

        assert markers(c, A, commit=False, topics={"t": [0]}) == {("t", 0): 0}  # ABORT at 5
        pd = fetch(c, "t", 0)
        assert pd.last_stable_offset == 2  # B still open
        assert record_offsets(pd) == [0, 1] and aborted(pd) == [(A, 0)]

        # a read_committed fetch parked at the LSO is completed by the marker that moves it
        result: dict[str, Any] = {}

        def wait() -> None:
            with Conn(broker) as c2:
                start = time.monotonic()
                result["pd"] = fetch(c2, "t", 2, max_wait=8000)
                result["elapsed"] = time.monotonic() - start

        th = threading.Thread(target=wait)
        th.start()
        time.sleep(0.5)
        assert "pd" not in result
        assert markers(c, B, commit=True, topics={"t": [0]}) == {("t", 0): 0}  # COMMIT at 6
        th.join(10)
        assert result["elapsed"] < 6
        pd = result["pd"]
        assert pd.last_stable_offset == 7 == pd.high_watermark
        assert record_offsets(pd) == [2, 3, 4] and aborted(pd) == [(A, 0)]
        assert latest(c, "t", 1) == 7

        # a zombie coordinator (lower coordinator epoch) is fenced; nothing is written
        assert produce(c, "t", txn_batch(B, 2, 1)).error_code == 0  # 7
        assert markers(c, B, commit=True, topics={"t": [0]}, coordinator_epoch=3) == {("t", 0): 0}  # 8
        assert produce(c, "t", txn_batch(B, 3, 1)).error_code == 0  # 9
        assert markers(c, B, commit=False, topics={"t": [0]}, coordinator_epoch=2) == {
            ("t", 0): TRANSACTION_COORDINATOR_FENCED}
        assert fetch(c, "t", 0).high_watermark == 10
        assert markers(c, B, commit=False, topics={"t": [0], "nope": [0]}, coordinator_epoch=3) == {
            ("t", 0): 0, ("nope", 0): 3}

    # our read_committed consumer: the aborted records and the markers are skipped
    consumer: KafkaConsumer[bytes | None, bytes | None] = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                                                          isolation_level="read_committed",
                                                          auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("t", 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 15
        while consumer.position(TopicPartition("t", 0)) < 11 and time.monotonic() < deadline:
            seen += [r.value for r in consumer.poll(0.5) if r.value is not None]
        assert seen == [b"b0", b"b1", b"v2"]  # A's aborted txn, B's aborted v3 and the 4 markers skipped
        assert consumer.end_offsets([TopicPartition("t", 0)])[TopicPartition("t", 0)] == 11
    finally:
        consumer.close()


def test_produce_verification_and_transactional_id_rules(broker: MiniBroker) -> None:
    assert broker.context is not None

    class Refuse(AcceptAll):
        def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: Sequence[TopicPartition]) -> Mapping[TopicPartition, int]:
            super().verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
            return {tp: INVALID_TXN_STATE for tp in partitions}

    with Conn(broker) as c:
        # transactional records need a transactional id (Kafka: TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        assert produce(c, "t", txn_batch(A, 0, 1), transactional_id=None).error_code == \
            TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        broker.context.transaction_verifier = Refuse()
        assert produce(c, "t", txn_batch(A, 0, 1)).error_code == INVALID_TXN_STATE
        assert fetch(c, "t", 0, isolation=0).high_watermark == 0  # nothing written
        broker.context.transaction_verifier = None  # no coordinator: transactional produce is not served
        assert produce(c, "t", txn_batch(A, 0, 1)).error_code == 42


def test_txn_offset_commit_pending_until_marker_and_describe_producers(broker: MiniBroker) -> None:
    with Conn(broker) as c:
        def commit(pid: int, offset: int, generation: int = -1, member: str = "") -> int:
            req = TxnOffsetCommitRequest(
                transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=0, generation_id=generation,
                member_id=member, topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                        committed_metadata="")])])
            return int(c.call(req, 3).topics[0].partitions[0].error_code)

        def committed(require_stable: bool) -> tuple[int, int]:
            req = OffsetFetchRequest(group_id="g", require_stable=require_stable, topics=[
                OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
            p = c.call(req, 7).topics[0].partitions[0]
            return int(p.committed_offset), int(p.error_code)

        assert commit(A, 42) == 0
        assert committed(False) == (-1, 0)  # pending: not visible
        assert committed(True) == (-1, UNSTABLE_OFFSET_COMMIT)
        assert commit(A, 43, generation=5, member="nobody") == 25  # UNKNOWN_MEMBER_ID (KIP-447 fields)
        # group "g"'s partition of 50 (Java's "g".hashCode() is 103): the markers go where its offsets are
        g_partition = 103 % 50
        assert markers(c, A, commit=True, topics={"__consumer_offsets": [g_partition]}) == \
            {("__consumer_offsets", g_partition): 0}
        assert committed(True) == (42, 0)
        assert commit(B, 99) == 0
        assert markers(c, B, commit=False, topics={"__consumer_offsets": [g_partition]}) == \
            {("__consumer_offsets", g_partition): 0}
        assert committed(True) == (42, 0)  # aborted: dropped
        assert commit(B, 100) == 0  # pending across a restart of the coordinator (below)

        assert produce(c, "t", txn_batch(A, 0, 2)).error_code == 0
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        described = admin.describe_producers([("t", 0)])  # a plain tuple is accepted; the result key is TopicPartition
        assert [type(tp) for tp in described] == [TopicPartition]
        states = described[TopicPartition("t", 0)]
        assert [(s.producer_id, s.producer_epoch, s.last_sequence, s.current_transaction_start_offset)
                for s in states] == [(A, 0, 1, 0)]
        assert states[0].coordinator_epoch is None and states[0].last_timestamp == NOW_MS

    gc = broker.group_coordinator
    assert gc is not None
    gc.shutdown()  # the coordinator's log replayed: committed, aborted and still-pending offsets come back
    from mini_broker.group.group_coordinator import GroupCoordinator
    from mini_broker.group.group_metadata_manager import GroupMetadataManager

    assert broker.data_dir is not None
    again = GroupCoordinator(gc.config, GroupMetadataManager(broker.data_dir, broker.time), broker.time)
    again.startup()
    try:
        group = again.get_group("g")
        assert group is not None
        assert group.offsets[("t", 0)].offset == 42
        assert {pid: {tp: o.offset for tp, o in offs.items()} for pid, offs in group.pending_txn_offsets.items()} == {
            B: {("t", 0): 100}}
    finally:
        again.shutdown()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_kill9_keeps_open_transactions_lso_and_aborted_index(tmp_path: Path) -> None:
    from types import SimpleNamespace
    from typing import cast

    from tests.integration.broker.broker_process import BrokerProcess
    from tests.integration.broker.test_broker_protocol import create_topic

    def connect(proc: BrokerProcess) -> Conn:
        return Conn(cast(MiniBroker, SimpleNamespace(port=proc.port)))

    data_dir = tmp_path / "data"
    proc = BrokerProcess(data_dir, module="tests.integration.broker.permissive_txn_broker")
    try:
        with connect(proc) as c:
            assert create_topic(c, "t").error_code == 0
            assert produce(c, "t", txn_batch(A, 0, 2)).error_code == 0  # 0-1
            assert produce(c, "t", txn_batch(B, 0, 1)).error_code == 0  # 2
            assert markers(c, A, commit=False, topics={"t": [0]}) == {("t", 0): 0}  # 3
            assert produce(c, "t", txn_batch(A, 2, 1)).error_code == 0  # 4: A's next txn, open
            before = fetch(c, "t", 0)
            assert (before.last_stable_offset, aborted(before)) == (2, [(A, 0)])
        proc.kill9()
        proc = BrokerProcess(data_dir, module="tests.integration.broker.permissive_txn_broker")
        with connect(proc) as c:
            pd = fetch(c, "t", 0)
            assert (pd.high_watermark, pd.last_stable_offset) == (5, 2)
            assert aborted(pd) == [(A, 0)] and record_offsets(pd) == [0, 1]
            assert latest(c, "t", 1) == 2
            # the open transactions survived: B's commit releases up to A's open one, A's abort the rest
            assert markers(c, B, commit=True, topics={"t": [0]}) == {("t", 0): 0}  # 5
            assert fetch(c, "t", 0).last_stable_offset == 4
            assert markers(c, A, commit=False, topics={"t": [0]}) == {("t", 0): 0}  # 6
            pd = fetch(c, "t", 0)
            assert pd.last_stable_offset == 7 and aborted(pd) == [(A, 0), (A, 4)]
        assert proc.terminate() == 0
    finally:
        proc.ensure_dead()
