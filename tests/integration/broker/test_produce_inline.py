"""A single broker handles non-transactional Produce on its network thread (``KafkaApis.inline_produce``): the
same requests give the same answers and the same log bytes as through the handler threads, good or bad."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

# producer state is kept for producer.id.expiration.ms after a batch's timestamp: use a current one
NOW_MS = int(time.time() * 1000)


def records(values: list[bytes], pid: int = -1, seq: int = -1) -> bytes:
    builder = MemoryRecordsBuilder(producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)
    for i, value in enumerate(values):
        assert builder.append(NOW_MS + i, b"k", value)
    return builder.build()


def corrupt(data: bytes) -> bytes:
    bad = bytearray(data)
    bad[-1] ^= 0xFF  # inside the CRC's range
    return bytes(bad)


def produce(topic: str, partition: int, data: bytes, acks: int = 1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=data)])])


def answers(response: Any) -> list[tuple[str, int, int, int, list[int]]]:
    return [(t.name, p.index, p.error_code, p.base_offset, [e.batch_index for e in p.record_errors])
            for t in response.responses for p in t.partition_responses]


def run(inline: bool) -> tuple[list[object], list[bytes]]:
    """Answers to a script of produce requests, and each partition's log bytes after it."""
    with MiniBroker() as broker:
        assert broker.apis is not None and broker.replica_manager is not None
        assert broker.apis.inline_produce  # a single broker's default
        broker.apis.inline_produce = inline
        broker.replica_manager.create_topic("t", 2, {})
        script = [
            produce("t", 0, records([b"a", b"b", b"c"])),
            produce("t", 1, records([b"x"]), acks=-1),
            produce("t", 1, records([b"i0", b"i1"], pid=7, seq=0), acks=-1),  # idempotent
            produce("t", 1, records([b"i0", b"i1"], pid=7, seq=0), acks=-1),  # its retry: original offsets
            produce("t", 1, records([b"i9"], pid=7, seq=9), acks=-1),  # OUT_OF_ORDER_SEQUENCE_NUMBER
            produce("t", 0, corrupt(records([b"bad"]))),  # CORRUPT_MESSAGE
            produce("t", 0, records([b"big" * 400_000])),  # MESSAGE_TOO_LARGE
            produce("nope", 0, records([b"a"])),  # UNKNOWN_TOPIC_OR_PARTITION
            produce("t", 0, records([b"d"]), acks=2),  # INVALID_REQUIRED_ACKS
        ]
        out: list[object] = []
        with Conn(broker) as conn:
            for body in script:
                out.append(answers(conn.call(body, 9)))
            conn.send(produce("t", 0, records([b"e"]), acks=0), 9)  # no answer
            out.append(answers(conn.call(produce("t", 0, records([b"f"])), 9)))
            conn.send(produce("t", 0, corrupt(records([b"g"])), acks=0), 9)
            out.append(conn.closed_by_broker())  # an acks=0 error closes the connection
        logs = []
        for partition in (0, 1):
            lg = broker.replica_manager.log_manager.get_log("t", partition)
            assert lg is not None
            segment_files = sorted(n for n in os.listdir(lg.dir_path) if n.endswith(".log"))
            logs.append(b"".join(Path(lg.dir_path, n).read_bytes() for n in segment_files))
        return out, logs


def test_produce_on_the_network_thread_answers_and_writes_as_on_a_handler_thread() -> None:
    inline_answers, inline_logs = run(inline=True)
    queued_answers, queued_logs = run(inline=False)
    assert inline_answers == queued_answers
    assert inline_logs == queued_logs
    assert inline_answers[:4] == [[("t", 0, 0, 0, [])], [("t", 1, 0, 0, [])], [("t", 1, 0, 1, [])],
                                  [("t", 1, 0, 1, [])]]
    assert [a[0][2] for a in inline_answers[4:9]] == [45, 2, 10, 3, 21]  # type: ignore[index]
    assert inline_answers[-1] is True
    assert inline_logs[0] and inline_logs[1]
