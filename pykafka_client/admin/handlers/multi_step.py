"""The admin APIs not yet converted to an :class:`~pykafka_client.admin.api_handler.AdminApiHandler`: their
entry points in the table, each running its own multi-step logic on the AdminContext (in ``admin/cluster.py``,
``offsets.py``, ``transactions.py``). They need lookups the generic driver does not have yet:
describe_cluster picks DescribeCluster or Metadata by the broker's versions; the partition calls ask each
partition's leader and retry with fresh metadata; the transaction calls batch ids per transaction coordinator
and retry single ids, list every broker, or write markers to a leader."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pykafka_client.admin import cluster, offsets, transactions
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.types import (
    AbortTransactionSpec,
    ClusterDescription,
    IsolationLevel,
    ListOffsetsResultInfo,
    OffsetSpec,
    ProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.arguments import list_argument


class DescribeCluster:
    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None) -> ClusterDescription:
        return cluster.describe_cluster(ctx, timeout)


class ListOffsets:
    @staticmethod
    def call(ctx: AdminContext, specs: Mapping[tuple[str, int], OffsetSpec], timeout: float | None = None,
             isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
             ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        return offsets.list_offsets(ctx, specs, timeout, isolation_level)


class DescribeProducers:
    @staticmethod
    def call(ctx: AdminContext, partitions: Iterable[tuple[str, int]],
             timeout: float | None = None) -> dict[TopicPartition, list[ProducerState]]:
        return offsets.describe_producers(ctx, partitions, timeout)


class DescribeTransactions:
    @staticmethod
    def call(ctx: AdminContext, transactional_ids: Iterable[str],
             timeout: float | None = None) -> dict[str, TransactionDescription]:
        ids = list_argument("describe_transactions", "transactional_ids", transactional_ids, str,
                            "a list of transactional ids (str)")
        with ctx.lock:
            return transactions.describe_transactions(ctx, ids, ctx.timer(timeout))


class ListTransactions:
    @staticmethod
    def call(ctx: AdminContext, states: Iterable[TransactionState] = (), producer_ids: Iterable[int] = (),
             duration_ms: int = -1, timeout: float | None = None) -> list[TransactionListing]:
        wanted = list_argument("list_transactions", "states", states, TransactionState,
                               "a list of TransactionState, e.g. [TransactionState.ONGOING]")
        pids = list_argument("list_transactions", "producer_ids", producer_ids, int, "a list of producer ids (int)")
        with ctx.lock:
            return transactions.list_transactions(ctx, wanted, pids, duration_ms, ctx.timer(timeout))


class AbortTransaction:
    @staticmethod
    def call(ctx: AdminContext, spec: AbortTransactionSpec, timeout: float | None = None) -> None:
        if not isinstance(spec, AbortTransactionSpec):
            raise TypeError(f"abort_transaction(spec=...) takes an AbortTransactionSpec, not {type(spec).__name__}")
        with ctx.lock:
            transactions.abort_transaction(ctx, spec, ctx.timer(timeout))
