"""Deterministic test doubles for consumer components: a scripted ConsumerClient and metadata builders.

``FakeConsumerClient`` records every ``send``; tests answer with :meth:`respond` (a response body),
:meth:`fail` (an exception) or :meth:`disconnect`. Nothing happens in the background: futures
complete only when the test says so, in the test's thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.network.client_request import RequestHeaderInfo
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages.metadata_response import MetadataResponse
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.structs import Node
from pykafka_client.utils.time import MockTime, Timer
from tests.doubles.mock_client import MockClient


@dataclass
class Sent:
    node: Node
    body: Any
    future: RequestFuture[ClientResponse]
    timeout_ms: int | None
    latest_allowed_version: int | None = None


class FakeConsumerClient:
    def __init__(self, time: MockTime, version: int = 12) -> None:
        self.time = time
        self.version = version
        self.sent: list[Sent] = []
        self.unavailable: set[int] = set()
        self.auto_responders: list[Callable[[Node, Any], Any | None]] = []
        self.wakeups = 0

    # ConsumerClient protocol
    def send(
        self, node: Node, body: Any, request_timeout_ms: int | None = None, *, latest_allowed_version: int | None = None
    ) -> RequestFuture[ClientResponse]:
        future: RequestFuture[ClientResponse] = RequestFuture()
        s = Sent(node, body, future, request_timeout_ms, latest_allowed_version)
        self.sent.append(s)
        return future

    def _auto_respond(self) -> None:
        progress = True
        while progress:  # responses may trigger new requests (JoinGroup -> SyncGroup)
            progress = False
            for s in list(self.sent):
                if s.future.is_done():
                    continue
                for responder in self.auto_responders:
                    body = responder(s.node, s.body)
                    if body is not None:
                        if isinstance(body, BaseException):
                            s.future.raise_(body)
                        else:
                            self.complete(s, body)
                        progress = True
                        break

    def poll_future(self, future: RequestFuture[Any], timer: Timer) -> bool:
        self._auto_respond()
        if not future.is_done():
            self.time.sleep(max(1, timer.remaining_ms()))
            timer.update()
        return future.is_done()

    def poll(self, timer: Timer, poll_condition: Any = None) -> None:
        if self.wakeups:
            self.wakeups = 0
            from pykafka_client.errors import WakeupException

            raise WakeupException("woken up")
        self._auto_respond()
        if poll_condition is None or poll_condition.should_block():
            self.time.sleep(max(1, min(timer.remaining_ms(), 100)))
        timer.update()

    def poll_no_wakeup(self) -> None:
        self._auto_respond()

    def least_loaded_node(self) -> Node | None:
        return Node(0, "localhost", 9092)

    def is_unavailable(self, node: Node) -> bool:
        return node.id in self.unavailable

    def has_pending_requests(self, node: Node | None = None) -> bool:
        return any(not s.future.is_done() and (node is None or s.node == node) for s in self.sent)

    def await_metadata_update(self, timer: Timer) -> bool:
        self.time.sleep(max(1, timer.remaining_ms()))
        timer.update()
        return False

    def wakeup(self) -> None:
        self.wakeups += 1

    def maybe_trigger_wakeup(self) -> None:
        pass

    def close(self) -> None:
        pass

    def disconnect_async(self, node: Node) -> None:
        pass

    # test side
    def pending(self) -> list[Sent]:
        return [s for s in self.sent if not s.future.is_done()]

    def complete(self, s: Sent, body: Any) -> None:
        version = self.version if s.latest_allowed_version is None else min(self.version, s.latest_allowed_version)
        header = RequestHeaderInfo(int(s.body.API_KEY), version, "client", len(self.sent))
        now = self.time.hi_res_clock_ms()
        s.future.complete(ClientResponse(header, None, str(s.node.id), now, now, response_body=body))

    def respond(self, body: Any, index: int = 0) -> Sent:
        s = self.pending()[index]
        self.complete(s, body)
        return s

    def fail(self, exc: BaseException, index: int = 0) -> Sent:
        s = self.pending()[index]
        s.future.raise_(exc)
        return s


def consumer_client(
    time: MockTime, metadata: Metadata, *, fetch_version: int = 12
) -> tuple[MockClient, ConsumerNetworkClient]:
    """The consumer's real ConsumerNetworkClient over a MockClient whose polls advance ``time``.
    Fetch is capped at ``fetch_version`` (12: topics named in fetch responses, not by id)."""
    lo, _ = CLIENT_SUPPORTED_VERSIONS[ApiKey.FETCH]
    client = MockClient(
        time, metadata, NodeApiVersions.create({ApiKey.FETCH: (lo, fetch_version)}), advance_time_on_poll=True
    )
    return client, ConsumerNetworkClient(client, metadata, time, retry_backoff_ms=100, request_timeout_ms=30_000)


TOPIC_IDS: dict[str, uuid.UUID] = {}


def metadata_with(
    partitions: dict[str, int], leaders: dict[tuple[str, int], int] | None = None, nodes: int = 1, epoch: int = 0
) -> ConsumerMetadata:
    """A ConsumerMetadata holding ``partitions`` (topic -> count) led by node 0 unless ``leaders`` says otherwise."""
    md = ConsumerMetadata(SubscriptionState())
    update_metadata(md, partitions, leaders, nodes, epoch)
    return md


def update_metadata(
    md: Metadata,
    partitions: dict[str, int],
    leaders: dict[tuple[str, int], int] | None = None,
    nodes: int = 1,
    epoch: int = 0,
) -> None:
    leaders = leaders or {}
    resp = MetadataResponse(
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=i, host="localhost", port=9092 + i) for i in range(nodes)
        ],
        cluster_id="c",
        controller_id=0,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name=t,
                topic_id=TOPIC_IDS.setdefault(t, uuid.uuid4()),
                partitions=[
                    MetadataResponse.MetadataResponsePartition(
                        partition_index=p,
                        leader_id=leaders.get((t, p), 0),
                        leader_epoch=epoch,
                        replica_nodes=[leaders.get((t, p), 0)],
                        isr_nodes=[leaders.get((t, p), 0)],
                    )
                    for p in range(n)
                ],
            )
            for t, n in partitions.items()
        ],
    )
    md.update(md.request_version(), resp, False, 0)


def batch(
    base_offset: int,
    values: list[bytes],
    *,
    producer_id: int = -1,
    transactional: bool = False,
    compression: int = 0,
    leader_epoch: int = 0,
    timestamp: int = 1000,
) -> bytes:
    from pykafka_client.protocol.compression import CompressionType

    b = MemoryRecordsBuilder(
        CompressionType(compression),
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        is_transactional=transactional,
        partition_leader_epoch=leader_epoch,
        write_limit=1 << 30,
    )
    for i, v in enumerate(values):
        b.append(timestamp + i, b"k%d" % (base_offset + i), v, [("h", b"1")])
    return b.build()


def control_batch(offset: int, producer_id: int, commit: bool) -> bytes:
    from pykafka_client.protocol.records import ControlRecordType, EndTransactionMarker, build_end_transaction_marker

    marker = EndTransactionMarker(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, 0)
    return build_end_transaction_marker(
        marker, producer_id=producer_id, producer_epoch=0, timestamp=1000, base_offset=offset
    )


class Script:
    """Answers requests by type, in order: ``add(RequestType, response | exception | fn(body))``.
    A request type with nothing scripted stays unanswered (in flight)."""

    def __init__(self, client: FakeConsumerClient) -> None:
        self.entries: list[tuple[type, Any]] = []
        self.seen: list[Any] = []
        client.auto_responders.append(self)

    def add(self, request_type: type, answer: Any) -> Script:
        self.entries.append((request_type, answer))
        return self

    def __call__(self, node: Node, body: Any) -> Any | None:
        for i, (t, answer) in enumerate(self.entries):
            if isinstance(body, t):
                del self.entries[i]
                self.seen.append(body)
                return answer(body) if callable(answer) and not isinstance(answer, type) else answer
        return None

    def requests(self, request_type: type) -> list[Any]:
        return [b for b in self.seen if isinstance(b, request_type)]
