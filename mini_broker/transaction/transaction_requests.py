"""What goes into the transaction coordinator and what it answers: typed requests and results.

The API handlers build these from the wire requests (version rules already applied). Every request that
changes state may be answered later (after its ``__transaction_state`` append), so it comes with a reply
callback; the sans-IO core never calls it, it only names it in a ``Send*Response`` effect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from pykafka_client.structs import TopicPartition

NONE: Final = 0


@dataclass(frozen=True, slots=True)
class InitProducerIdParams:
    """InitProducerId with a transactional id; ``producer_id``/``producer_epoch`` -1 unless the client
    sent its current ones (v3+, KIP-360)."""

    transactional_id: str
    transaction_timeout_ms: int
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AddPartitionsParams:
    """AddPartitionsToTxn (one transaction of it) or AddOffsetsToTxn (the group's offsets partition)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: Sequence[TopicPartition]


@dataclass(frozen=True, slots=True)
class EndTxnParams:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One transactional id as DescribeTransactions/ListTransactions show it."""

    transactional_id: str
    state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    partitions: Sequence[TopicPartition]


InitProducerIdCallback = Callable[[InitProducerIdResult], None]
#: Answer of AddPartitionsToTxn (every partition of the request), AddOffsetsToTxn and EndTxn: an error code.
ErrorCallback = Callable[[int], None]
