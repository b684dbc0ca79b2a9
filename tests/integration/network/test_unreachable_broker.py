"""An unreachable or wrong bootstrap fails clearly and in bounded time (issue 22 item 2).

Each client is pointed at a closed loopback port (connection refused), a name that does not resolve, or
(for the missing-topic case) a MiniBroker that does not auto-create topics, with a small timeout. The error
must name the address and the cause, and the call must return within the configured bound (plus
``SLACK_S`` for scheduling on a loaded machine). The cause is logged at WARNING once, not at every retry.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer
from pykafka_client.admin import NewTopic
from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.structs import TopicPartition

pytestmark = pytest.mark.integration

BOUND_MS = 1500
SLACK_S = 1.5
UNRESOLVABLE = "nonexistent.invalid:9092"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def refused() -> str:
    """``127.0.0.1:PORT`` where nothing listens: every connect is refused."""
    return f"127.0.0.1:{_closed_port()}"


def _returns_within_bound(call: Callable[[], Any]) -> Any:
    started = time.monotonic()
    result = call()
    elapsed = time.monotonic() - started
    assert elapsed < BOUND_MS / 1000 + SLACK_S, f"took {elapsed:.1f} s for a bound of {BOUND_MS} ms"
    return result


def _raises_within_bound(call: Callable[[], Any]) -> str:
    def run() -> BaseException:
        with pytest.raises(KafkaTimeoutError) as info:
            call()
        return info.value

    return str(_returns_within_bound(run))


def _warnings_about(caplog: pytest.LogCaptureFixture, address: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and address in r.getMessage()]


# --- producer ------------------------------------------------------------------------------------


def test_producer_send_to_a_refused_bootstrap_names_the_address_and_says_connection_refused(
    refused: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pykafka_client")
    with KafkaProducer({"bootstrap.servers": refused, "max.block.ms": BOUND_MS}) as producer:
        future = _returns_within_bound(lambda: producer.send("t", b"v"))
        error = future.exception(timeout=0)
    assert isinstance(error, KafkaTimeoutError)
    text = str(error)
    assert text.startswith(f"Topic t not present in metadata after {BOUND_MS} ms: could not connect to any broker")
    assert f"{refused}: connection refused" in text
    # the client retried many times in 1.5 s (reconnect backoff 50 ms..1 s) but said so once at WARNING
    (warning,) = _warnings_about(caplog, refused)
    assert "connection refused" in warning


def test_producer_send_to_a_name_that_does_not_resolve_says_so() -> None:
    with KafkaProducer({"bootstrap.servers": UNRESOLVABLE, "max.block.ms": BOUND_MS}) as producer:
        text = _raises_within_bound(lambda: producer.partitions_for("t"))
    assert f"{UNRESOLVABLE}: name not resolved" in text


@pytest.fixture(scope="module")
def strict_broker() -> Iterator[MiniBroker]:
    """A broker that does not create topics on first use."""
    with MiniBroker({"auto.create.topics.enable": False}) as b:
        yield b


def test_producer_send_to_a_missing_topic_says_it_does_not_exist_and_how_to_create_it(
    strict_broker: MiniBroker,
) -> None:
    servers = strict_broker.bootstrap_servers
    with KafkaProducer({"bootstrap.servers": servers, "max.block.ms": BOUND_MS}) as producer:
        future = _returns_within_bound(lambda: producer.send("no-such-topic", b"v"))
        text = str(future.exception(timeout=0))
    assert text.startswith(f"Topic no-such-topic not present in metadata after {BOUND_MS} ms: the topic does not exist")
    assert f"`pykafka topics create no-such-topic --partitions N --bootstrap-server {servers}`" in text
    assert "AdminClient.create_topics" in text
    # the hint is right: after creating it the same producer sends
    with AdminClient({"bootstrap.servers": servers}) as admin:
        admin.create_topics([NewTopic("no-such-topic", 1, 1)], timeout=10)
    with KafkaProducer({"bootstrap.servers": servers, "max.block.ms": 10_000}) as producer:
        assert producer.send("no-such-topic", b"v").result(timeout=10).offset == 0


# --- admin ---------------------------------------------------------------------------------------


def test_admin_timeout_is_a_whole_sentence_naming_bootstrap_servers_and_the_cause(refused: str) -> None:
    with AdminClient({"bootstrap.servers": refused}) as admin:
        text = _raises_within_bound(lambda: admin.list_topics(timeout=BOUND_MS / 1000))
    assert not text.endswith(" to"), text
    assert "waiting for a broker to take the METADATA request" in text
    assert f"(bootstrap.servers={refused})" in text
    assert f"{refused}: connection refused" in text


def test_admin_timeout_on_a_name_that_does_not_resolve_says_so() -> None:
    with AdminClient({"bootstrap.servers": UNRESOLVABLE}) as admin:
        text = _raises_within_bound(lambda: admin.describe_cluster(timeout=BOUND_MS / 1000))
    assert f"{UNRESOLVABLE}: name not resolved" in text


@pytest.fixture
def not_kafka() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a listener that is not Kafka: it answers anything with an HTTP error and hangs up."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, name="not-kafka", daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        server.close()


def test_admin_timeout_against_a_listener_that_is_not_kafka_says_the_handshake_failed(not_kafka: str) -> None:
    """A wrong port (some other service): the connect succeeds, the ApiVersions handshake does not."""
    with AdminClient({"bootstrap.servers": not_kafka}) as admin:
        text = _raises_within_bound(lambda: admin.list_topics(timeout=BOUND_MS / 1000))
    assert f"{not_kafka}: connection closed before the broker answered ApiVersions" in text
    assert "not a Kafka listener, or one with another security.protocol" in text


# --- consumer ------------------------------------------------------------------------------------


@pytest.fixture
def consumer(refused: str) -> Iterator[KafkaConsumer[Any, Any]]:
    c: KafkaConsumer[Any, Any] = KafkaConsumer({"bootstrap.servers": refused, "group.id": "g"})
    try:
        yield c
    finally:
        c.close(timeout=0)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: c.list_topics(timeout=BOUND_MS / 1000), id="list_topics"),
        pytest.param(lambda c: c.partitions_for("t", timeout=BOUND_MS / 1000), id="partitions_for"),
        pytest.param(lambda c: c.end_offsets([TopicPartition("t", 0)], timeout=BOUND_MS / 1000), id="end_offsets"),
        pytest.param(lambda c: c.committed([TopicPartition("t", 0)], timeout=BOUND_MS / 1000), id="committed"),
    ],
)
def test_consumer_timeouts_name_the_address_and_the_cause(
    consumer: KafkaConsumer[Any, Any], refused: str, call: Callable[[KafkaConsumer[Any, Any]], Any]
) -> None:
    text = _raises_within_bound(lambda: call(consumer))
    assert f"{refused}: connection refused" in text


def test_consumer_poll_returns_empty_within_its_timeout_and_warns_once(
    consumer: KafkaConsumer[Any, Any], refused: str, caplog: pytest.LogCaptureFixture
) -> None:
    """As Java, poll() does not raise for an unreachable cluster: it returns nothing when its timeout
    passes. The log says why, once."""
    caplog.set_level(logging.DEBUG, logger="pykafka_client")
    consumer.subscribe(["t"])
    records = _returns_within_bound(lambda: consumer.poll(BOUND_MS / 1000))
    assert records.count() == 0
    (warning,) = _warnings_about(caplog, refused)
    assert "connection refused" in warning
