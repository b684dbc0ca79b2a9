"""The compiled bulk append of ``send_batch`` (the kernel's ``ManyAppender``): ``RecordAccumulator.try_append_many`` in
one call.

``RecordAccumulator.try_append_many`` is the reference. With the kernel, an accumulator puts a ``ManyAppender`` in its
place (an attribute of the instance): the topic's queue and sticky partition, the open batch's append of a run of
records under the deque lock (the kernel's ``append_pending`` with the batch's fields, as ``ProducerBatch.append_many``),
the sticky accounting and, when a switch is due, the partitioner's ``update_partition_info``, and the close of a batch
that has no room for the next record, without the Python frames of ``try_append_many``, ``_open_queue`` and
``append_many``. It calls the reference (with the accumulator and the same arguments, before any change) for input
that is not lists of records and plain ints. It holds the accumulator by a weak reference (the accumulator holds it).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from pykafka_client.protocol.records import _native


def new_many_appender(owner: Any, reference: Callable[..., Any], topics: dict[str, Any]) -> Callable[..., Any] | None:
    """The kernel's ``ManyAppender`` for the accumulator ``owner`` (``reference``: its class's ``try_append_many``,
    ``topics``: its topic entries), or None without the kernel (the reference then appends)."""
    kernel = _native.kernel
    if kernel is None:
        return None
    made: Callable[..., Any] = kernel.ManyAppender(topics, weakref.ref(owner), reference)
    return made
