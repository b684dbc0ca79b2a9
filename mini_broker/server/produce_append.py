"""A single broker's common Produce request above the log in one compiled call (the kernel's ``ProduceAppender``).

The reference is the Python path it skips: :func:`mini_broker.server.apis.produce.handle`'s checks and
:meth:`ReplicaManager.append_records` / ``_append_to_local_log`` with the single broker's ``append_as_leader``. The
compiled call takes a request without a transactional id, acks 1 or -1, one topic with one partition whose records
are one memoryview of a non-transactional v2 batch, on a topic a client append found valid before and a partition the
metadata cache knows, the log manager holds and is not compacted, on a replica manager whose replication is the
single broker's; it appends through the log's compiled common append (``LogEnd``) under the log's lock with the parts
``Log.client_append_parts`` lends (through the public ``Log.append`` where the log lends none or the end declines),
counts BytesIn / MessagesIn, builds the PartitionResponse, wakes the purgatories' operations watching the partition,
for acks=-1 reads the high watermark from the log's end (no followers), and where the answer goes now encodes its
frame (the handler sends it with ``KafkaApis.send_frame``). It declines (None, nothing done) for anything else, so that the
reference runs; an append that raised (any Exception from its ask for the log's parts on, as in the reference's try) is
answered by :meth:`ReplicaManager.append_failed`, the reference's (tests/unit/broker/server/test_produce_append_failures.py).

Without the kernel (``PYKAFKA_NO_NATIVE=1``) there is no appender: :func:`new_produce_appender` returns None and every
request takes the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition

if TYPE_CHECKING:
    from mini_broker.log.unified_log import Log

#: the replica manager each append is passed, and the partition result it makes (``ReplicaManager`` and
#: ``PartitionResponse``: parameters, so that this module does not import the replica manager, which imports it)
_Manager = TypeVar("_Manager", contravariant=True)
_Response = TypeVar("_Response")


class ProduceAppender(Protocol[_Manager, _Response]):
    """What the produce handler calls (the kernel's type)."""

    def append(self, body: object, replica_manager: _Manager, version: int, correlation_id: int, /) -> tuple[
            list[TopicPartition], dict[TopicPartition, _Response], Log | None, bytes | None] | None:
        """(order, results, pending, frame) of the request ``body`` appended (pending: the log of an acks=-1 append
        whose answer waits for the replicas, else None; frame: where the append was done and the answer goes now, the
        whole answer at ``version`` for ``correlation_id``, else None); None where it declines, nothing done."""


_R = TypeVar("_R")


def new_produce_appender(topics: Mapping[str, Any], logs: Mapping[tuple[str, int], Log], client_topics: set[str],
                         fetch_purgatory: object, produce_purgatory: object,
                         make_tp: Callable[[str, int], TopicPartition], make_key: Callable[[TopicPartition], object],
                         make_response: Callable[..., _R], origin: object, leader_epoch: int,
                         no_batches_error: Callable[[str], Exception], no_batches_message: str,
                         single_broker: type) -> ProduceAppender[Any, _R] | None:
    """The compiled appender lent these (see the kernel's ``produce_appender``), or None without the kernel. Nothing
    lent refers to the replica manager (each append is passed it: no cycle through the kernel type)."""
    kernel = _native.loaded_kernel()
    if kernel is None:
        return None
    appender: ProduceAppender[Any, _R] = kernel.produce_appender(
        topics, logs, client_topics, fetch_purgatory, produce_purgatory, make_tp, make_key, make_response, origin,
        leader_epoch, no_batches_error, no_batches_message, single_broker)
    return appender
