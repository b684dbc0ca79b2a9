"""Client quotas end to end: AlterClientQuotas / DescribeClientQuotas through our AdminClient, and
enforcement as Kafka does since KIP-219 (throttle_time_ms in the response at once, the channel muted until
the throttle ends), seen by our client and by confluent-kafka."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
    NewTopic,
    OffsetSpec,
)
from pykafka_client.errors import InvalidRequestError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ApiVersionsRequest, MetadataRequest, ProduceRequest
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MB = 1_000_000
USER, CLIENT = ClientQuotaEntity.USER, ClientQuotaEntity.CLIENT_ID


@pytest.fixture
def broker() -> Iterator[MiniBroker]:
    # 2 windows of 1 s: the rate follows the last 1-2 s, so a 10 s measurement is not dominated by the
    # initial burst Kafka's default 11 windows allow (10 s worth of quota at once)
    with MiniBroker(num_network_threads=1, num_io_threads=2, quota_window_num=2) as b:
        yield b


@pytest.fixture
def admin(broker: MiniBroker) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as a:
        yield a


def set_quota(admin: AdminClient, entity: dict[str, str | None], **ops: float | None) -> None:
    admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity(entity), ops)], timeout=10)


def test_alter_and_describe_client_quotas(broker: MiniBroker, admin: AdminClient) -> None:
    with Conn(broker) as c:
        keys = {k.api_key for k in c.call(ApiVersionsRequest(), 3).api_keys}
    assert {int(ApiKey.DESCRIBE_CLIENT_QUOTAS), int(ApiKey.ALTER_CLIENT_QUOTAS)} <= keys
    alice = ClientQuotaEntity({USER: "alice"})
    set_quota(admin, {USER: "alice"}, producer_byte_rate=1024, consumer_byte_rate=2048)
    set_quota(admin, {USER: "alice", CLIENT: "app"}, request_percentage=50)
    set_quota(admin, {CLIENT: None}, producer_byte_rate=4096)
    set_quota(admin, {"ip": None}, connection_creation_rate=100)
    everything = admin.describe_client_quotas(timeout=10)
    assert everything[alice] == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert everything[ClientQuotaEntity({CLIENT: None})] == {"producer_byte_rate": 4096.0}
    assert len(everything) == 4
    only_alice = admin.describe_client_quotas(
        ClientQuotaFilter.contains_only([ClientQuotaFilterComponent.of_entity(USER, "alice")]), timeout=10)
    assert list(only_alice) == [alice]
    with_alice = admin.describe_client_quotas(
        ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_entity(USER, "alice")]), timeout=10)
    assert len(with_alice) == 2
    defaults = admin.describe_client_quotas(
        ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_default_entity(CLIENT)]), timeout=10)
    assert list(defaults) == [ClientQuotaEntity({CLIENT: None})]
    set_quota(admin, {USER: "alice"}, producer_byte_rate=None)  # remove one key
    assert admin.describe_client_quotas(timeout=10)[alice] == {"consumer_byte_rate": 2048.0}
    admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity({USER: "bob"}), {"producer_byte_rate": 1})],
                              timeout=10, validate_only=True)
    assert ClientQuotaEntity({USER: "bob"}) not in admin.describe_client_quotas(timeout=10)
    with pytest.raises(InvalidRequestError, match="connection_creation_rate"):
        set_quota(admin, {USER: "bob"}, connection_creation_rate=5)
    assert broker.socket_server is not None
    assert broker.socket_server.quotas.ip_connection_rate("10.1.2.3") == 100


def test_request_percentage_throttles_and_mutes_the_channel(broker: MiniBroker, admin: AdminClient) -> None:
    set_quota(admin, {CLIENT: "busy"}, request_percentage=0.0001)  # 1 µs of handler time per second
    with Conn(broker, client_id="busy") as c:
        throttles = [c.call(MetadataRequest(topics=None), 12).throttle_time_ms for _ in range(3)]
        assert max(throttles) > 0
        # KIP-219: the broker holds the channel muted for the throttle time after answering
        t0 = time.monotonic()
        throttle = c.call(MetadataRequest(topics=None), 12).throttle_time_ms
        c.call(MetadataRequest(topics=None), 12)
        assert throttle > 0 and time.monotonic() - t0 >= throttle / 1000 * 0.9
    with Conn(broker, client_id="idle") as other:  # other client ids are not throttled
        assert other.call(MetadataRequest(topics=None), 12).throttle_time_ms == 0


def test_acks_zero_produce_over_quota_mutes_the_channel(broker: MiniBroker, admin: AdminClient) -> None:
    """No response carries throttle_time_ms for acks=0, so the mute alone holds the client back."""
    admin.create_topics([NewTopic("fire", 1, 1)], timeout=10)
    set_quota(admin, {CLIENT: "fire"}, producer_byte_rate=1000)
    records = MemoryRecordsBuilder(write_limit=1 << 20)
    records.append(int(time.time() * 1000), None, b"f" * 20_000, [])
    with Conn(broker, client_id="fire") as c:
        c.send(ProduceRequest(acks=0, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="fire", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records.build())])]), 9)
        t0 = time.monotonic()
        c.call(MetadataRequest(topics=None), 12)  # read only once the throttle (capped at 2 windows) is over
        assert time.monotonic() - t0 >= 1.5
    assert log_end_offset(admin, "fire") == 1


def log_end_offset(admin: AdminClient, topic: str) -> int:
    return admin.list_offsets({(topic, 0): OffsetSpec.latest()}, timeout=10)[TopicPartition(topic, 0)].offset


@pytest.mark.slow
def test_producer_byte_rate_quota_holds_our_producer_to_the_rate(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The broker runs in its own process, as in production: in this one its threads and the producer's
    # share one GIL, and on a busy 2-core runner that contention, not the quota, held the rate to 0.8 MB/s.
    from tests.integration.broker.broker_process import BrokerProcess

    broker = BrokerProcess(tmp_path, overrides={"quota.window.num": 2})  # see the broker fixture
    try:
        with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
            admin.create_topics([NewTopic("q", 1, 1)], timeout=10)
            set_quota(admin, {CLIENT: "limited"}, producer_byte_rate=1 * MB)
            value = b"x" * 10_000
            stop = threading.Event()
            producer = KafkaProducer({"bootstrap.servers": broker.bootstrap, "client.id": "limited",
                                      "batch.size": 100_000, "linger.ms": 5, "buffer.memory": 2_000_000})

            def produce() -> None:
                while not stop.is_set():
                    producer.send("q", value)

            caplog.set_level(logging.WARNING, logger="pykafka_client")
            t = threading.Thread(target=produce, daemon=True)
            t.start()
            try:
                time.sleep(3)  # past the first burst the window allows
                start_offset, t0 = log_end_offset(admin, "q"), time.monotonic()
                time.sleep(10)
                end_offset, t1 = log_end_offset(admin, "q"), time.monotonic()
            finally:
                stop.set()
                t.join(15)
                producer.close(timeout=0)
    finally:
        broker.terminate()
    rate = (end_offset - start_offset) * len(value) / (t1 - t0)
    print(f"producer under a 1 MB/s quota: {rate / MB:.3f} MB/s")
    assert 0.85 * MB <= rate <= 1.15 * MB
    assert any("throttles this client" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_consumer_byte_rate_quota_holds_our_consumer_to_the_rate(
        broker: MiniBroker, admin: AdminClient, caplog: pytest.LogCaptureFixture) -> None:
    admin.create_topics([NewTopic("c", 1, 1)], timeout=10)
    value = b"y" * 10_000
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "batch.size": 200_000}) as p:
        for _ in range(2_000):  # 20 MB: more than 15 s worth at 1 MB/s
            p.send("c", value)
        p.flush()
    set_quota(admin, {CLIENT: "slow-reader"}, consumer_byte_rate=1 * MB)
    caplog.set_level(logging.WARNING, logger="pykafka_client")
    consumed = 0
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "slow-reader",
                        "max.partition.fetch.bytes": 100_000, "fetch.max.bytes": 100_000,
                        "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition("c", 0)])
        t_warm = time.monotonic() + 3
        while time.monotonic() < t_warm:
            consumer.poll(0.2)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10:
            consumed += sum(len(r.value or b"") for r in consumer.poll(0.2))
        elapsed = time.monotonic() - t0
    rate = consumed / elapsed
    print(f"consumer under a 1 MB/s quota: {rate / MB:.3f} MB/s")
    assert 0.85 * MB <= rate <= 1.15 * MB
    assert any("throttles this client" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_confluent_kafka_sees_throttle_time(broker: MiniBroker, admin: AdminClient) -> None:
    ck = pytest.importorskip("confluent_kafka")
    admin.create_topics([NewTopic("ck", 1, 1)], timeout=10)
    set_quota(admin, {CLIENT: "ck-producer"}, producer_byte_rate=200_000)
    set_quota(admin, {CLIENT: "ck-consumer"}, consumer_byte_rate=200_000)
    throttles: list[int] = []

    def on_throttle(event: Any) -> None:  # confluent-kafka's ThrottleEvent
        throttles.append(int(event.throttle_time * 1000))

    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "ck-producer",
                     "throttle_cb": on_throttle, "linger.ms": 5})
    deadline = time.monotonic() + 20
    sent = 0
    while not throttles and time.monotonic() < deadline:
        try:
            p.produce("ck", b"z" * 10_000)
            sent += 1
        except BufferError:
            pass
        p.poll(0.001 if sent % 50 else 0.05)
    p.flush(10)
    assert throttles and max(throttles) > 0, "confluent-kafka producer saw no throttle"
    producer_throttles, throttles[:] = list(throttles), []
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "ck-consumer",
                     "group.id": "ck-quota", "auto.offset.reset": "earliest", "throttle_cb": on_throttle})
    c.assign([ck.TopicPartition("ck", 0, 0)])
    deadline = time.monotonic() + 20
    while not throttles and time.monotonic() < deadline:
        c.poll(0.2)
    c.close()
    print(f"confluent-kafka throttles: producer {producer_throttles[:3]}, consumer {throttles[:3]}")
    assert throttles and max(throttles) > 0, "confluent-kafka consumer saw no throttle"


def test_request_percentage_is_seen_by_our_client_and_by_confluent_kafka(
        broker: MiniBroker, admin: AdminClient, caplog: pytest.LogCaptureFixture) -> None:
    """A request_percentage quota (handler time, not bytes) throttles real clients too: our producer logs the
    throttle it honours, confluent-kafka's throttle_cb fires."""
    ck = pytest.importorskip("confluent_kafka")
    admin.create_topics([NewTopic("rp", 1, 1)], timeout=10)
    set_quota(admin, {CLIENT: "rp-ours"}, request_percentage=0.0001)
    set_quota(admin, {CLIENT: "rp-ck"}, request_percentage=0.0001)
    caplog.set_level(logging.WARNING, logger="pykafka_client")
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "rp-ours",
                        "linger.ms": 0}) as producer:
        for i in range(5):
            producer.send("rp", b"v%d" % i).result(30)
    assert any("throttles this client" in r.getMessage() for r in caplog.records)

    throttles: list[int] = []

    def on_throttle(event: Any) -> None:  # confluent-kafka's ThrottleEvent
        throttles.append(int(event.throttle_time * 1000))

    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "rp-ck",
                     "throttle_cb": on_throttle, "linger.ms": 0})
    deadline = time.monotonic() + 20
    while not throttles and time.monotonic() < deadline:
        p.produce("rp", b"z")
        p.poll(0.05)
    p.flush(10)
    assert throttles and max(throttles) > 0, "confluent-kafka producer saw no request_percentage throttle"
