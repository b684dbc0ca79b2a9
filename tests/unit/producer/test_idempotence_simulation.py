"""Exactly-once, in-order delivery under lost responses and retries: the Sender (MockClient, MockTime) against a
model broker that uses the broker's own ProducerStateManager. Seeded random schedules, so deterministic."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mini_broker.producer_state import BatchMetadata, ProducerStateManager
from pykafka_client.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from pykafka_client.producer.future_record_metadata import FutureRecordMetadata
from pykafka_client.protocol.messages import ProduceRequest, ProduceResponse
from pykafka_client.protocol.records.default_record_batch import DefaultRecordBatch
from tests.unit.producer.sender_harness import TP0, TP1, Harness

NOT_LEADER = 6


class ModelBroker:
    """One node's partitions: a list of values per partition and Kafka's producer-state checks."""

    def __init__(self, tmp: Path, max_batch_bytes: int | None = None) -> None:
        self.max_batch_bytes = max_batch_bytes
        self.logs: dict[int, list[bytes]] = {0: [], 1: []}
        self.state = {p: ProducerStateManager(f"t-{p}", str(tmp / f"t-{p}")) for p in (0, 1)}

    def handle(self, body: ProduceRequest) -> ProduceResponse:
        parts: list[ProduceResponse.PartitionProduceResponse] = []
        for topic in body.topic_data:
            for pd in topic.partition_data:
                assert pd.records is not None
                batch = DefaultRecordBatch(bytes(pd.records))  # type: ignore[arg-type]
                log = self.logs[pd.index]
                if self.max_batch_bytes is not None and batch.size_in_bytes > self.max_batch_bytes:
                    parts.append(ProduceResponse.PartitionProduceResponse(index=pd.index, error_code=10, base_offset=-1))
                    continue
                try:
                    checked = self.state[pd.index].prepare_append([batch], len(log))
                except OutOfOrderSequenceError:
                    parts.append(ProduceResponse.PartitionProduceResponse(index=pd.index, error_code=45, base_offset=-1))
                    continue
                except InvalidProducerEpochError:
                    parts.append(ProduceResponse.PartitionProduceResponse(index=pd.index, error_code=47, base_offset=-1))
                    continue
                if isinstance(checked, BatchMetadata):  # a duplicate: the original offsets, nothing written
                    base = checked.first_offset
                else:
                    base = len(log)
                    log.extend(r.value or b"" for r in batch.records())
                    self.state[pd.index].complete_append(checked)
                parts.append(ProduceResponse.PartitionProduceResponse(index=pd.index, error_code=0, base_offset=base, log_start_offset=0))
        return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=parts)])


def refuse(body: ProduceRequest) -> ProduceResponse:
    parts = [
        ProduceResponse.PartitionProduceResponse(index=pd.index, error_code=NOT_LEADER, base_offset=-1)
        for t in body.topic_data for pd in t.partition_data
    ]
    return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=parts)])


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("SIM_SEEDS", "30"))))
def test_exactly_once_in_order_under_lost_responses(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(idempotent=True, batch_size=rng.choice([80, 200, 1000]), retry_backoff_ms=10, retry_backoff_max_ms=50)
    broker = ModelBroker(tmp_path, rng.choice([None, 150]))  # 150 B: multi-record batches get MESSAGE_TOO_LARGE
    sent: dict[int, list[tuple[bytes, FutureRecordMetadata]]] = {0: [], 1: []}
    n = 0

    refusing = [0]  # steps left during which this node is not the leader
    refused_last_step = [False]

    def step(chaos: bool) -> None:
        """One Sender iteration, then the broker's side of the outstanding requests, in TCP order.

        Failures are those a real cluster produces: a connection that drops after the broker wrote a prefix
        of the requests, and a leadership move that refuses every request for a few steps, including those
        sent before the client processed an earlier refusal (they went to the same old leader). A broker
        that refused one request and wrote a later one of the same era would be inconsistent."""
        h.run_once()
        if refusing[0] > 0:
            refusing[0] -= 1
        if not h.client.requests:
            refused_last_step[0] = False
            h.time.sleep(rng.choice([0, 1, 5]))
            return
        action = rng.random() if chaos else 0.0
        if chaos and refusing[0] == 0 and action >= 0.85:
            refusing[0] = rng.randrange(1, 4)
        if refusing[0] > 0 or refused_last_step[0]:
            refused_last_step[0] = True
            while h.client.requests:
                body = h.client.requests[0].body
                assert isinstance(body, ProduceRequest)
                h.client.respond(refuse(body))
        elif action < 0.65:  # all answered
            while h.client.requests:
                body = h.client.requests[0].body
                assert isinstance(body, ProduceRequest)
                h.client.respond(broker.handle(body))
        else:  # the first k are written, then the connection drops: k answers lost
            for r in list(h.client.requests)[: rng.randrange(0, len(h.client.requests) + 1)]:
                assert isinstance(r.body, ProduceRequest)
                broker.handle(r.body)
            h.client.disconnect("0")
            # A real NetworkClient completes the requests of a dropped connection in the poll that notices
            # the drop, before anything else can be sent (MockClient would let a send slip in between).
            h.client.poll(0, h.time.hi_res_clock_ms())
        h.time.sleep(rng.choice([0, 1, 5, 20, 60]))

    for _ in range(150):
        for _ in range(rng.randrange(0, 4)):
            p = rng.choice((0, 1))
            value = b"r%05d" % n
            n += 1
            (f,) = h.append(TP0 if p == 0 else TP1, value)
            sent[p].append((value, f))
        step(chaos=True)
    refusing[0] = 0
    for _ in range(400):
        if all(f.done() for recs in sent.values() for _, f in recs):
            break
        step(chaos=False)
        h.time.sleep(60)
    for p, recs in sent.items():
        assert all(f.done() for _, f in recs), f"partition {p}: not all records completed"
        assert [f.exception(0) for _, f in recs] == [None] * len(recs)
        assert broker.logs[p] == [v for v, _ in recs], f"partition {p}: duplicates or reordering"
        for i, (_, f) in enumerate(recs):
            assert f.result(0).offset == i
