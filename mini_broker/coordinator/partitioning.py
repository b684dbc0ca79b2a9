"""Which internal partition holds a key (Kafka: ``GroupCoordinator.partitionFor`` /
``TransactionStateManager.partitionFor``) and the coordinator key of an internal record.

A group id's records live in ``__consumer_offsets`` partition ``partition_for(group_id, n)``, a transactional id's
in ``__transaction_state`` partition ``partition_for(transactional_id, n)``, with Kafka's
``Utils.abs(key.hashCode) % n`` (Java's ``String.hashCode``), so a key maps to the partition Kafka would pick and
groups spread over the partitions' leaders as on Kafka.

Every keyed record of an internal topic starts with its coordinator key: ``int16 key version, string id`` (the
group id of every ``__consumer_offsets`` record type, the transactional id of a ``__transaction_state`` record),
so the coordinator runtime routes a batch to its partition by its records' keys (:func:`coordinator_key_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykafka_client.protocol.types import Reader


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit signed overflow)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % numPartitions`` (``Utils.abs`` maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def coordinator_key_of(record_key: bytes) -> str:
    """The group or transactional id an internal record's key starts with (raises as the reader does for a key
    too short to have one)."""
    r = Reader(record_key)
    r.read_int16()
    return r.read_string()


def drop_keys_of_partition(in_partition: Callable[[str], bool], *states: dict[str, Any]) -> None:
    """Remove from each of ``states`` (maps by group or transactional id) the ids ``in_partition``: the state of a
    partition a coordinator stopped serving."""
    for state in states:
        for key in [k for k in state if in_partition(k)]:
            del state[key]
