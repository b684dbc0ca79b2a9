"""The compiled opening of a new batch (the kernel's ``BatchOpener``): ``RecordAccumulator.open_batch`` in one call.

``RecordAccumulator.open_batch`` is the reference: the kernel's send path calls it under a partition's deque lock when
the partition's open batch has no room for a record. With the kernel, an accumulator of uncompressed batches puts a
``BatchOpener`` in its place (an attribute of the instance, which the kernel finds by the same name): the accumulator's
closed check, ``BufferPool.try_allocate``, the new ``ProducerBatch`` (every slot copied from a prototype that
``ProducerBatch.__init__`` built, with the batch's partition, creation time, records and outcome its own), the deque's
append and the incomplete set's add in one compiled call, without the Python frames of ``open_batch``,
``estimate_size_upper_bound``, ``try_allocate``, ``_add_batch``, the clock, ``ProducerBatch.__init__`` and
``BatchOutcome.__init__``. It declines to the reference (called with the accumulator and the same arguments, before
any change) for a record with headers or larger than a batch.size batch takes, or when a class changed since.

The opener holds the accumulator by a weak reference: the accumulator holds the opener, and a closed producer's
objects are freed by their reference counts.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from pykafka_client.producer.buffer_pool import BufferPool
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.record_size import estimate_size_upper_bound
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SystemTime, Time


def new_batch_opener(
    owner: Any,
    reference: Callable[..., ProducerBatch | None],
    topics: dict[str, Any],
    batch_size: int,
    compression_type: Any,
    compression_level: int | None,
    condition: threading.Condition,
    pool: BufferPool,
    incomplete: object,
    time: Time,
    appending: list[None],
) -> Callable[..., ProducerBatch | None] | None:
    """The kernel's ``BatchOpener`` for the accumulator ``owner`` (``reference``: its class's ``open_batch``), or None
    without the kernel (the reference then opens every batch). The caller passes only uncompressed accumulators:
    a compressed batch's limits depend on its topic's estimated ratio."""
    kernel = _native.kernel
    if kernel is None:
        return None
    # a batch of batch.size, as _add_batch makes it (never queued: what each new batch is copied from)
    prototype = ProducerBatch(TopicPartition("", -1), batch_size, 0, compression_type, compression_level, False, 1.0, condition)
    if prototype.compression_ratio != 1.0:
        return None
    return kernel.BatchOpener(
        topics, prototype, pool, incomplete, None if type(time) is SystemTime else time.hi_res_clock_ms, appending,
        weakref.ref(owner), reference,
        # the key and value bytes up to which a record's upper bound (no headers) fits a batch of batch.size
        batch_size - estimate_size_upper_bound(None, None, ()),
    )
