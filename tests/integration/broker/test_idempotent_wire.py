"""Idempotent produce and InitProducerId on the wire against a real MiniBroker: error codes, original
offsets for duplicates, producer ids and producer state across a restart, and the TEST-ONLY fault hook."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.server.faults import FaultInjector
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.protocol.messages import InitProducerIdRequest
from pykafka_client.structs import TopicPartition
from tests.integration.broker.test_broker_protocol import produce
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_REQUEST = 42
# producer state is kept for producer.id.expiration.ms after a batch's timestamp: use a current one
NOW_MS = int(time.time() * 1000)


def idem_batch(pid: int, epoch: int, seq: int, n: int) -> bytes:
    b = ProducerBatch(TopicPartition("t", 0), 1 << 20, 0)
    for i in range(n):
        assert b.try_append(NOW_MS, None, b"v%d" % (seq + i), [], None, 0) is not None
    b.set_producer_state(pid, epoch, seq, False)
    return b.records()


def part(resp: Any) -> Any:
    return resp.responses[0].partition_responses[0]


def init_pid(conn: Conn, producer_id: int = -1, epoch: int = -1, transactional_id: str | None = None) -> Any:
    return conn.call(InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000,
                                           producer_id=producer_id, producer_epoch=epoch), 4)


def create(broker: MiniBroker, topic: str) -> None:
    assert broker.replica_manager is not None
    broker.replica_manager.create_topic(topic, 1, {})


def test_errors_duplicates_and_init_producer_id(tmp_path: Path) -> None:
    with MiniBroker(data_dir=str(tmp_path)) as broker:
        create(broker, "t")
        c = Conn(broker)
        try:
            r = init_pid(c)
            assert (r.error_code, r.producer_epoch) == (0, 0)
            pid = r.producer_id
            # KIP-360 request of an idempotent producer (no transactional id): Kafka hands out a new id, epoch 0
            r2 = init_pid(c, pid, 0)
            assert (r2.error_code, r2.producer_epoch) == (0, 0) and r2.producer_id != pid
            txn = init_pid(c, transactional_id="tx")  # the transaction coordinator answers it
            assert (txn.error_code, txn.producer_epoch) == (0, 0) and txn.producer_id not in (pid, r2.producer_id)
            assert (part(produce(c, "t", 0, idem_batch(pid, 0, 0, 3))).error_code,
                    part(produce(c, "t", 0, idem_batch(pid, 0, 0, 3))).base_offset) == (0, 0)
            assert part(produce(c, "t", 0, idem_batch(pid, 0, 3, 2))).base_offset == 3
            dup = part(produce(c, "t", 0, idem_batch(pid, 0, 0, 3)))
            assert (dup.error_code, dup.base_offset) == (0, 0)
            assert part(produce(c, "t", 0, idem_batch(pid, 0, 9, 1))).error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
            assert part(produce(c, "t", 0, idem_batch(pid, 1, 0, 1))).base_offset == 5
            assert part(produce(c, "t", 0, idem_batch(pid, 0, 5, 1))).error_code == INVALID_PRODUCER_EPOCH
        finally:
            c.close()
        assert broker.replica_manager is not None
        lg = broker.replica_manager.log_manager.get_log("t", 0)
        assert lg is not None and lg.log_end_offset == 6
    # clean restart on the same data dir: state from the snapshot, producer ids never reused
    with MiniBroker(data_dir=str(tmp_path)) as broker:
        c = Conn(broker)
        try:
            dup = part(produce(c, "t", 0, idem_batch(pid, 1, 0, 1)))
            assert (dup.error_code, dup.base_offset) == (0, 5)
            assert part(produce(c, "t", 0, idem_batch(pid, 1, 2, 1))).error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
            assert init_pid(c).producer_id > r2.producer_id
        finally:
            c.close()


def test_state_survives_kill9_via_replay(tmp_path: Path) -> None:
    from tests.integration.broker.broker_process import BrokerProcess, create_topic

    data_dir = tmp_path / "data"
    proc = BrokerProcess(data_dir)
    try:
        create_topic(proc.bootstrap, "k")
        c = Conn(cast(MiniBroker, proc))
        pid = init_pid(c).producer_id
        for i in range(8):
            assert part(produce(c, "k", 0, idem_batch(pid, 0, 2 * i, 2))).base_offset == 2 * i
        c.close()
        proc.kill9()  # no close: no snapshot at the log end; the state comes back by replaying the log
        proc = BrokerProcess(data_dir)
        c = Conn(cast(MiniBroker, proc))
        try:
            for i in range(3, 8):  # the producer's last 5 batches are duplicates, with their original offsets
                dup = part(produce(c, "k", 0, idem_batch(pid, 0, 2 * i, 2)))
                assert (dup.error_code, dup.base_offset) == (0, 2 * i)
            assert part(produce(c, "k", 0, idem_batch(pid, 0, 20, 1))).error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
            assert part(produce(c, "k", 0, idem_batch(pid, 0, 16, 1))).base_offset == 16
            assert init_pid(c).producer_id > pid  # the rest of the persisted id block is skipped
        finally:
            c.close()
        assert proc.terminate() == 0
    finally:
        proc.ensure_dead()


def test_fault_hook_drops_matching_produce_responses_after_the_append() -> None:
    injector = FaultInjector()
    with MiniBroker(fault_injector=injector) as broker:
        create(broker, "hit")
        create(broker, "other")
        assert broker.faults is injector
        injector.drop_produce_responses(2, topic="hit")
        c = Conn(broker)
        try:
            assert part(produce(c, "other", 0, idem_batch(7, 0, 0, 1))).error_code == 0  # not matching
            c.send(produce_request("hit"), 9)
            assert c.closed_by_broker()
        finally:
            c.close()
        c = Conn(broker)
        try:
            c.send(produce_request("hit"), 9)
            assert c.closed_by_broker()
        finally:
            c.close()
        c = Conn(broker)
        try:
            assert part(produce(c, "hit", 0, idem_batch(-1, -1, -1, 1))).base_offset == 2  # exhausted: answered
        finally:
            c.close()
        assert injector.dropped_produce_responses == 2 and injector.pending_produce_drops() == 0
        assert broker.replica_manager is not None
        lg = broker.replica_manager.log_manager.get_log("hit", 0)
        assert lg is not None and lg.log_end_offset == 3  # the dropped ones were appended
    with pytest.raises(ValueError):
        injector.drop_produce_responses(0)


def produce_request(topic: str) -> Any:
    from pykafka_client.protocol.messages import ProduceRequest

    return ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=idem_batch(-1, -1, -1, 1))])])
