"""A real MiniBroker answers Produce requests that race a topic's deletion or the broker's shutdown, on the compiled
kernel and on the pure-Python reference (``record_impl``): every request gets an answer (an error code, or for a
shutdown a clean disconnect), never a hang, and the broker stays up for the other topics (a producer's sends to one
all succeed, during and after the deletions)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer
from pykafka_client.errors import KafkaStorageError, UnknownTopicOrPartitionError
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.wire import Conn
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("record_impl"), pytest.mark.timeout(120)]

#: what a partition of a deleted topic may answer: appended (before), the log closed under the append (between the
#: lookup and the append), the topic gone (after)
DELETION_CODES = {0, KafkaStorageError.code, UnknownTopicOrPartitionError.code}


def produce(topic: str, n: int, acks: int) -> ProduceRequest:
    builder = MemoryRecordsBuilder(write_limit=1 << 20)
    for i in range(4):
        builder.append(int(time.time() * 1000), b"k%d" % i, b"v%d-%d" % (n, i))
    return ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=bytes(builder.build()))])])


def sender(broker: MiniBroker, topic: str, stop: threading.Event, codes: list[int], errors: list[BaseException],
           on_disconnect: Callable[[], bool] = lambda: False) -> threading.Thread:
    """A thread producing to ``topic`` over one raw connection until ``stop``, keeping each answer's error code (a
    disconnect ends it where ``on_disconnect()`` allows it, else it is an error)."""

    def run() -> None:
        try:
            with Conn(broker, timeout=10.0) as conn:
                n = 0
                while not stop.is_set():
                    n += 1
                    try:
                        response = conn.call(produce(topic, n, -1 if n % 2 else 1), 9)
                    except (ConnectionError, OSError):
                        if on_disconnect():
                            return
                        raise
                    codes.extend(p.error_code for t in response.responses for p in t.partition_responses)
        except BaseException as e:  # (kept for the test's thread to fail on)
            errors.append(e)

    thread = threading.Thread(target=run, name=f"sender-{topic}", daemon=True)
    thread.start()
    return thread


def test_a_topic_deleted_while_a_producer_sends_is_answered_and_the_broker_stays_up() -> None:
    with MiniBroker() as broker:
        rm = broker.replica_manager
        assert rm is not None
        rm.create_topic("other", 1, {})
        producer = KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0,
                                  "max.block.ms": 10_000, "delivery.timeout.ms": 30_000})
        try:
            futures = []
            for round_ in range(4):
                topic = f"doomed-{round_}"
                rm.create_topic(topic, 1, {})
                codes: list[int] = []
                errors: list[BaseException] = []
                stop = threading.Event()
                thread = sender(broker, topic, stop, codes, errors)
                deadline = time.monotonic() + 10
                while len(codes) < 20 * (round_ + 1) and time.monotonic() < deadline and not errors:
                    futures.append(producer.send("other", b"during-%d" % len(codes)))
                    time.sleep(0.001)
                rm.delete_topic(topic)
                seen = len(codes)
                while len(codes) < seen + 20 and time.monotonic() < deadline + 10 and not errors:
                    time.sleep(0.001)
                stop.set()
                thread.join(15)
                assert not thread.is_alive(), "a produce request was not answered"
                assert not errors, errors
                assert set(codes) <= DELETION_CODES, set(codes)
                assert codes[0] == 0 and codes[-1] == UnknownTopicOrPartitionError.code
            futures.extend(producer.send("other", b"after-%d" % i) for i in range(50))
            offsets = [f.result(timeout=20).offset for f in futures]
            assert offsets == list(range(len(futures)))
        finally:
            producer.close()


def test_a_broker_shut_down_while_a_producer_sends_answers_or_disconnects() -> None:
    broker = MiniBroker()
    broker.start()
    rm = broker.replica_manager
    assert rm is not None
    rm.create_topic("t", 1, {})
    codes: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    stopping = threading.Event()
    thread = sender(broker, "t", stop, codes, errors, on_disconnect=stopping.is_set)
    deadline = time.monotonic() + 10
    while len(codes) < 50 and time.monotonic() < deadline and not errors:
        time.sleep(0.001)
    stopping.set()
    broker.stop()
    thread.join(15)
    stop.set()
    assert not thread.is_alive(), "a produce request was neither answered nor disconnected"
    assert not errors, errors
    assert codes and set(codes) <= {0, KafkaStorageError.code}, set(codes)
