"""A Sender wired to MockClient + MockTime, with helpers to script produce responses (Java SenderTest setup)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TypeGuard

from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.producer.future_record_metadata import FutureRecordMetadata
from pykafka_client.producer.producer_metadata import ProducerMetadata
from pykafka_client.producer.record_accumulator import RecordAccumulator
from pykafka_client.producer.sender import Sender
from pykafka_client.producer.transaction_manager import TransactionManager
from pykafka_client.protocol.messages import InitProducerIdResponse, ProduceRequest, ProduceResponse
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from pykafka_client.protocol.records.memory_records import MemoryRecords
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient
from tests.doubles.responses import metadata_response, nodes
from tests.unit.producer.helpers import partitions_of

TOPIC = "t"
TP0 = TopicPartition(TOPIC, 0)
TP1 = TopicPartition(TOPIC, 1)
PID = 1000
MAX_INT = 2**31 - 1

PartSpec = tuple[int, int] | tuple[int, int, int]


def produce_response(
    parts: Mapping[TopicPartition, PartSpec],
    *,
    record_errors: Mapping[TopicPartition, list[tuple[int, str]]] | None = None,
    current_leader: Mapping[TopicPartition, tuple[int, int]] | None = None,
    node_endpoints: list[Node] | None = None,
) -> ProduceResponse:
    """``parts``: tp -> (error_code, base_offset[, log_start_offset])."""
    by_topic: dict[str, list[ProduceResponse.PartitionProduceResponse]] = {}
    for tp, spec in parts.items():
        code, base = spec[0], spec[1]
        log_start = spec[2] if len(spec) > 2 else 0
        p = ProduceResponse.PartitionProduceResponse(index=tp.partition, error_code=code, base_offset=base, log_start_offset=log_start)
        for i, msg in (record_errors or {}).get(tp, []):
            p.record_errors.append(ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=msg))
        if current_leader and tp in current_leader:
            lid, ep = current_leader[tp]
            p.current_leader = ProduceResponse.LeaderIdAndEpoch(leader_id=lid, leader_epoch=ep)
        by_topic.setdefault(tp.topic, []).append(p)
    return ProduceResponse(
        responses=[ProduceResponse.TopicProduceResponse(name=t, partition_responses=ps) for t, ps in by_topic.items()],
        node_endpoints=[ProduceResponse.NodeEndpoint(node_id=n.id, host=n.host, port=n.port) for n in (node_endpoints or [])],
    )


def batches_in(body: ProduceRequest) -> dict[TopicPartition, DefaultRecordBatch]:
    """The record batch sent for each partition of a produce request."""
    out: dict[TopicPartition, DefaultRecordBatch] = {}
    for t in body.topic_data:
        for p in t.partition_data:
            assert p.records is not None
            (b,) = list(MemoryRecords(bytes(p.records)).batches())  # type: ignore[arg-type]
            assert isinstance(b, DefaultRecordBatch)
            out[TopicPartition(t.name, p.index)] = b
    return out


def is_produce(body: object) -> TypeGuard[ProduceRequest]:
    return isinstance(body, ProduceRequest)


class Harness:
    def __init__(
        self,
        *,
        idempotent: bool = False,
        retries: int = MAX_INT,
        max_in_flight: int = 5,
        delivery_timeout_ms: int = 120_000,
        linger_ms: int = 0,
        batch_size: int = 16384,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 100,
        max_request_size: int = 1 << 20,
        request_timeout_ms: int = 30_000,
        acks: int = -1,
        with_producer_id: bool = True,
        partitions: int = 2,
        transactional_id: str | None = None,
        before_sender: Callable[[Harness], None] | None = None,
    ) -> None:
        """``before_sender``: called with the harness once the accumulator is made, before the Sender is (which decides
        then what its compiled completion does itself: a test's replacement of a method goes there)."""
        self.time = MockTime()
        self.brokers = nodes(2)
        self.node0, self.node1 = self.brokers
        self.metadata = ProducerMetadata(retry_backoff_ms, retry_backoff_max_ms, rng=random.Random(0))
        self.metadata.add(TOPIC, self.time.hi_res_clock_ms())
        self.metadata.update(
            0,
            metadata_response(self.brokers, {TOPIC: partitions}, leaders={(TOPIC, p): 0 for p in range(partitions)}),
            False,
            self.time.hi_res_clock_ms(),
        )
        self.client = MockClient(self.time, self.metadata)
        self.tm: TransactionManager | None = TransactionManager() if idempotent else None
        if transactional_id is not None:
            self.tm = TransactionManager(transactional_id, 60_000, retry_backoff_ms, self.time)
        elif self.tm is not None and with_producer_id:
            self.tm.set_producer_id_and_epoch(PID, 0)
        self.accumulator = RecordAccumulator(
            batch_size=batch_size,
            linger_ms=linger_ms,
            retry_backoff_ms=retry_backoff_ms,
            retry_backoff_max_ms=retry_backoff_max_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            buffer_pool=BufferPool(1 << 22, self.time),
            time=self.time,
            transaction_manager=self.tm,
            rng=random.Random(0),
        )
        if before_sender is not None:
            before_sender(self)
        self.sender = Sender(
            self.client,
            self.metadata,
            self.accumulator,
            guarantee_message_order=max_in_flight == 1,
            max_request_size=max_request_size,
            acks=acks,
            retries=retries,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            time=self.time,
            transaction_manager=self.tm,
        )

    def append(self, tp: TopicPartition = TP0, value: bytes = b"value", n: int = 1) -> list[FutureRecordMetadata]:
        out = []
        for _ in range(n):
            r = self.accumulator.append(tp.topic, tp.partition, self.time.milliseconds(), None, value, [], None, 0, self.metadata)
            out.append(r.future)
        return out

    def run_once(self) -> None:
        self.sender.run_once()

    def run_until(self, cond: Callable[[], bool], max_tries: int = 10) -> None:
        for _ in range(max_tries):
            if cond():
                return
            self.sender.run_once()
        assert cond(), "condition not reached within the iterations"

    def last_request(self) -> ProduceRequest:
        body = self.client.sent[-1].body
        assert isinstance(body, ProduceRequest)
        return body

    def produce_requests(self) -> list[ProduceRequest]:
        return [r.body for r in self.client.sent if isinstance(r.body, ProduceRequest)]

    def respond_oldest(self, error: int, offsets: dict[TopicPartition, int]) -> None:
        """Answer the oldest in-flight produce request with ``error`` for each of its partitions: on success (0) at
        base offset ``offsets[tp]`` (0 at first), then moved 100 on; -1 otherwise."""
        body = self.client.pending()[0].body
        assert isinstance(body, ProduceRequest)
        parts = {}
        for tp in partitions_of(body):
            parts[tp] = (error, offsets.get(tp, 0) if error == 0 else -1)
            if error == 0:
                offsets[tp] = offsets.get(tp, 0) + 100
        self.client.respond(produce_response(parts))


def init_pid_response(error_code: int = 0, pid: int = PID, epoch: int = 0) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=error_code, producer_id=pid, producer_epoch=epoch)
