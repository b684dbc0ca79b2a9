"""The consumer's embedded protocol inside JoinGroup/SyncGroup (Java: ConsumerProtocol).

Wire form: an int16 version, then ConsumerProtocolSubscription / ConsumerProtocolAssignment at that
version (generated classes). Versions: 0 topics + user data; 1 owned partitions; 2 generation id;
3 rack id. A member sends its subscription at the latest version; data from a *newer* member is read
with the latest version this client knows, ignoring trailing fields (forward compatibility, as in
Java). A negative version or truncated data raises MessageDecodeError.
"""

from __future__ import annotations

from pykafka_client.consumer.assignors.abstract_assignor import Assignment, Subscription
from pykafka_client.errors import MessageDecodeError
from pykafka_client.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykafka_client.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from pykafka_client.protocol.types import Reader, Writer
from pykafka_client.structs import TopicPartition

PROTOCOL_TYPE = "consumer"
CONSUMER_PROTOCOL_V0 = 0
CONSUMER_PROTOCOL_V3 = 3
LATEST_VERSION = CONSUMER_PROTOCOL_V3


def _group(partitions: list[TopicPartition]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return by_topic


def _read_version(reader: Reader, what: str) -> int:
    version = reader.read_int16()
    if version < CONSUMER_PROTOCOL_V0:
        raise MessageDecodeError(f"unsupported {what} version {version}", 0)
    return min(version, LATEST_VERSION)


def serialize_subscription(subscription: Subscription, version: int = LATEST_VERSION) -> bytes:
    data = ConsumerProtocolSubscription(
        topics=list(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=[
            ConsumerProtocolSubscription.TopicPartition(t, ps)
            for t, ps in _group(subscription.owned_partitions).items()
        ],
        generation_id=subscription.generation_id,
        rack_id=subscription.rack_id,
    )
    w = Writer()
    w.write_int16(version)
    data.write(w, version)
    return w.to_bytes()


def deserialize_subscription(buf: bytes | memoryview) -> Subscription:
    r = Reader(buf)
    version = _read_version(r, "subscription")
    data = ConsumerProtocolSubscription.read(r, version)
    return Subscription(
        topics=list(data.topics),
        user_data=None if data.user_data is None else bytes(data.user_data),
        owned_partitions=[TopicPartition(t.topic, p) for t in data.owned_partitions for p in t.partitions],
        generation_id=data.generation_id,
        rack_id=data.rack_id,
    )


def serialize_assignment(assignment: Assignment, version: int = LATEST_VERSION) -> bytes:
    data = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(t, ps) for t, ps in _group(assignment.partitions).items()
        ],
        user_data=assignment.user_data,
    )
    w = Writer()
    w.write_int16(version)
    data.write(w, version)
    return w.to_bytes()


def deserialize_assignment(buf: bytes | memoryview) -> Assignment:
    """An empty buffer is an empty assignment (the group leader may send none)."""
    if len(buf) == 0:
        return Assignment([])
    r = Reader(buf)
    version = _read_version(r, "assignment")
    data = ConsumerProtocolAssignment.read(r, version)
    return Assignment(
        [TopicPartition(t.topic, p) for t in data.assigned_partitions for p in t.partitions],
        None if data.user_data is None else bytes(data.user_data),
    )
