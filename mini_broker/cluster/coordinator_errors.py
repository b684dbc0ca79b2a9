"""What a coordinator answers when the ISR wait of its internal append failed (Kafka: the error mappings of
``GroupMetadataManager.storeOffsets`` / ``storeGroup`` and ``TransactionStateManager.appendTransactionToLog``),
and how a held answer is made to carry it (:func:`fail_answer`).

The wait fails with a produce error of the internal partition: NOT_LEADER_OR_FOLLOWER (leadership lost),
NOT_ENOUGH_REPLICAS(_AFTER_APPEND) (ISR below ``min.insync.replicas``) or REQUEST_TIMED_OUT (after
``offsets.commit.timeout.ms``). Every mapped error sends the client to FindCoordinator again or makes it retry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mini_broker.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from mini_broker.share.share_coordinator import SHARE_GROUP_STATE_TOPIC_NAME
from mini_broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC_NAME
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    InvalidCommitOffsetSizeError,
    InvalidFetchSizeError,
    KafkaStorageError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RebalanceInProgressError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.types import Message
from pykafka_client.structs import TopicPartition

_UNAVAILABLE = frozenset(int(e.code) for e in (UnknownTopicOrPartitionError, NotEnoughReplicasError,
                                               NotEnoughReplicasAfterAppendError))
_NOT_COORDINATOR = frozenset(int(e.code) for e in (NotLeaderOrFollowerError, KafkaStorageError))
_TOO_LARGE = frozenset(int(e.code) for e in (RecordTooLargeError, RecordBatchTooLargeError))
_TIMED_OUT = int(RequestTimedOutError.code)


def offsets_append_error(code: int) -> int:
    """An offset commit's append failed with ``code`` (Kafka ``storeOffsets``): the partition is unavailable or
    timed out -> COORDINATOR_NOT_AVAILABLE, not led -> NOT_COORDINATOR, too large -> INVALID_COMMIT_OFFSET_SIZE."""
    if code in _UNAVAILABLE or code == _TIMED_OUT:
        return int(CoordinatorNotAvailableError.code)
    if code in _NOT_COORDINATOR:
        return int(NotCoordinatorError.code)
    if code in _TOO_LARGE or code == InvalidFetchSizeError.code:
        return int(InvalidCommitOffsetSizeError.code)
    return code


def group_append_error(code: int) -> int:
    """A group metadata append (JoinGroup / SyncGroup) failed with ``code`` (Kafka ``storeGroup``): as for offsets,
    except a timeout -> REBALANCE_IN_PROGRESS (the members join again) and too large -> UNKNOWN_SERVER_ERROR."""
    if code == _TIMED_OUT:
        return int(RebalanceInProgressError.code)
    if code in _TOO_LARGE or code == InvalidFetchSizeError.code:
        return int(UnknownServerError.code)
    return offsets_append_error(code)


def txn_append_error(code: int) -> int:
    """A transaction state append failed with ``code`` (Kafka ``appendTransactionToLog``): as for offsets,
    except too large -> UNKNOWN_SERVER_ERROR."""
    if code in _TOO_LARGE:
        return int(UnknownServerError.code)
    return offsets_append_error(code)


_GROUP_METADATA_APIS = frozenset(int(k) for k in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP))
_OFFSETS_APIS = frozenset(int(k) for k in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT, ApiKey.LEAVE_GROUP,
                                           ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE))
_SHARE_STATE_APIS = frozenset(int(k) for k in (
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE, ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE))
_ERROR_FIELDS = ("error_code", "partition_error_code")


def answer_topic(api_key: int) -> str:
    """The internal topic whose appends an answer of ``api_key`` reports on."""
    if api_key in _GROUP_METADATA_APIS or api_key in _OFFSETS_APIS:
        return GROUP_METADATA_TOPIC_NAME
    if api_key in _SHARE_STATE_APIS:
        return SHARE_GROUP_STATE_TOPIC_NAME
    return TRANSACTION_STATE_TOPIC_NAME


def fail_answer(api_key: int, body: Message, append_errors: Mapping[TopicPartition, int]) -> None:
    """Make the held answer ``body`` of ``api_key`` say that the internal appends it reports on failed
    (``append_errors``: the produce error per internal partition whose ISR wait failed). WriteTxnMarkers: the
    ``__consumer_offsets`` partitions that failed carry their produce error (as Kafka's per-partition append
    result). The others: the mapped error of their internal topic replaces every success code of the answer,
    top-level and per partition / per group (an answer without a top-level code, such as OffsetCommit, is
    never turned into a closed connection)."""
    if api_key == ApiKey.WRITE_TXN_MARKERS:
        _fail_markers(body, append_errors)
        return
    topic = answer_topic(api_key)
    codes = [code for tp, code in append_errors.items() if tp.topic == topic]
    if not codes:
        return  # the appends this answer reports on are on the ISR; another internal topic's failed
    if api_key in _GROUP_METADATA_APIS:
        error = group_append_error(codes[0])
    elif api_key in _OFFSETS_APIS or api_key in _SHARE_STATE_APIS:
        error = offsets_append_error(codes[0])
    else:
        error = txn_append_error(codes[0])
    set_success_codes(body, error)


def set_success_codes(message: Message, error: int) -> None:
    """Every error code of ``message`` and its nested structs that says success now says ``error``."""
    assert dataclasses.is_dataclass(message)  # every generated message is one
    for field in dataclasses.fields(message):
        name = field.name
        value = getattr(message, name)
        if name in _ERROR_FIELDS and value == 0:
            setattr(message, name, error)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Message):
                    set_success_codes(item, error)


def _fail_markers(body: Message, append_errors: Mapping[TopicPartition, int]) -> None:
    for marker in getattr(body, "markers", ()):
        for topic in marker.topics:
            for p in topic.partitions:
                code = append_errors.get(TopicPartition(topic.name, p.partition_index))
                if code is not None and p.error_code == 0:
                    p.error_code = code
