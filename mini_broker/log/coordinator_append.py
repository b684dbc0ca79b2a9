"""How a coordinator (group or transaction) appends a batch to its internal log, shared by both.

On a single broker the log is the coordinator's own and the high watermark follows the append at once. On a
cluster the log is a replicated ``__consumer_offsets`` / ``__transaction_state`` partition this broker leads:
``replicated_append`` is the leader's append (leadership checked, batches stamped with the leader epoch, the
high watermark left to replication), which raises NOT_LEADER_OR_FOLLOWER once this broker no longer leads.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_broker.log.unified_log import AppendOrigin, Log
from pykafka_client.errors import NotLeaderOrFollowerError


def append_coordinator_records(log: Log, records: bytes, replicated_append: Callable[[bytes], None] | None,
                               flush: bool = False) -> None:
    if replicated_append is not None:
        replicated_append(records)
        return
    log.append(records, origin=AppendOrigin.COORDINATOR)
    if flush:
        log.flush()
    log.update_high_watermark(log.log_end_offset)


def refuse_append(records: bytes) -> None:
    """The append of a coordinator that resigned its partition's leadership (a request that raced the
    resignation): refused, never silently dropped."""
    raise NotLeaderOrFollowerError("this broker no longer leads the coordinator's partition; find the coordinator "
                                   "again")
