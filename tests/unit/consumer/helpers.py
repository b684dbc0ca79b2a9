"""Helpers for consumer unit tests: :class:`ConsumerEnv` (the real ConsumerNetworkClient over the
project's one consumer test double, ``tests/doubles/mock_client.MockClient``), metadata and record-batch
builders. Answer requests with ``env.respond(body)``, ``env.disconnect()`` or, by request type,
``tests.doubles.mock_client.Script``. Nothing happens in the background: responses complete in the
test's thread, when the code under test (or the test) polls.
"""

from __future__ import annotations

import uuid
from typing import Any

from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.network.client_request import ClientRequest
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages.metadata_response import MetadataResponse
from pykafka_client.protocol.records import MemoryRecordsBuilder
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_client import MockClient


class ConsumerEnv:
    """The consumer's real ConsumerNetworkClient (``cnc``) over a MockClient (``client``) whose polls
    advance ``time``. Fetch is capped at ``fetch_version`` (12: fetch responses name topics, not ids).
    The helpers below drive the ConsumerNetworkClient the way the consumer's next poll would."""

    def __init__(self, time: MockTime, metadata: Metadata, *, fetch_version: int = 12) -> None:
        lo, _ = CLIENT_SUPPORTED_VERSIONS[ApiKey.FETCH]
        self.time = time
        self.metadata = metadata
        self.client = MockClient(
            time, metadata, NodeApiVersions.create({ApiKey.FETCH: (lo, fetch_version)}), advance_time_on_poll=True
        )
        self.cnc = ConsumerNetworkClient(self.client, metadata, time, retry_backoff_ms=100, request_timeout_ms=30_000)

    def pending(self) -> list[ClientRequest]:
        """Transmit what is queued, then the requests in flight, oldest first."""
        self.cnc.poll_no_wakeup()
        return self.client.pending()

    @property
    def sent(self) -> list[ClientRequest]:
        """Transmit what is queued, then every request sent so far."""
        self.cnc.poll_no_wakeup()
        return self.client.sent

    def respond(self, body: Any) -> None:
        """Answer the oldest request in flight and run its completion handlers."""
        self.pending()
        self.client.respond(body)
        self.cnc.poll_no_wakeup()

    def disconnect(self) -> None:
        """The connection of the oldest request in flight drops (its requests fail with DisconnectError)."""
        self.client.disconnect(self.pending()[0].destination)
        self.cnc.poll_no_wakeup()


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


def assert_wakeup_interrupts_blocked_poll(client: MockClient, consumer: Any) -> None:
    """A ``consumer.poll(5.0)`` blocked in ``client`` raises WakeupException once another thread calls
    ``consumer.wakeup()`` (the consumer has a request in flight that is never answered)."""
    import threading

    import pytest

    from pykafka_client.errors import WakeupException

    client.enable_blocking_until_wakeup(1)
    t = threading.Timer(0.1, consumer.wakeup)
    t.start()
    with pytest.raises(WakeupException):
        consumer.poll(5.0)
    t.join()
