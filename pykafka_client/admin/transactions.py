"""The AdminClient's transaction calls (Java ``KafkaAdminClient.describeTransactions`` /
``listTransactions`` / ``abortTransaction``): DescribeTransactions goes to each transactional id's coordinator
(found with FindCoordinator, key type TRANSACTION), ListTransactions to every broker, and the ABORT marker of
abort_transaction (a WriteTxnMarkers request, as a coordinator would send it) to the partition's leader."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.types import (
    AbortTransactionSpec,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from pykafka_client.errors import UnsupportedVersionError, for_code
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import Timer

TRANSACTION_KEY_TYPE = 1


def _raise(code: int, subject: str) -> None:
    raise for_code(code)(subject)


def _to(node: Node) -> Callable[[], Node | None]:
    return lambda: node


def _always(body: DescribeTransactionsRequest) -> Callable[[int], DescribeTransactionsRequest]:
    return lambda version: body


def describe_transactions(ctx: AdminContext, transactional_ids: list[str],
                          timer: Timer) -> dict[str, TransactionDescription]:
    out: dict[str, TransactionDescription] = {}
    pending = list(dict.fromkeys(transactional_ids))
    while pending:
        by_node: dict[int, list[str]] = defaultdict(list)
        for tid in pending:
            by_node[ctx.find_coordinator(tid, timer, key_type=TRANSACTION_KEY_TYPE)].append(tid)
        retry: list[str] = []
        for node_id, ids in by_node.items():
            node, resp = ctx.send(ApiKey.DESCRIBE_TRANSACTIONS,
                                     _always(DescribeTransactionsRequest(transactional_ids=ids)),
                                     ctx.broker_target(node_id), timer)
            assert isinstance(resp, DescribeTransactionsResponse)
            for s in resp.transaction_states:
                if s.error_code:
                    if for_code(s.error_code).retriable and not timer.is_expired():
                        retry.append(s.transactional_id)
                        continue
                    _raise(s.error_code, f"transactional id {s.transactional_id!r}")
                out[s.transactional_id] = TransactionDescription(
                    node.id, TransactionState.parse(s.transaction_state), s.producer_id, s.producer_epoch,
                    s.transaction_timeout_ms, s.transaction_start_time_ms if s.transaction_start_time_ms >= 0 else None,
                    frozenset(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions))
        pending = retry
        if pending:
            ctx.backoff(timer)
    return out


def list_transactions(ctx: AdminContext, states: Iterable[TransactionState], producer_ids: Iterable[int],
                      duration_ms: int, timer: Timer) -> list[TransactionListing]:
    nodes = ctx.metadata.fetch().nodes
    if not nodes or any(n.id < 0 for n in nodes):  # only the bootstrap addresses so far
        ctx.refresh_metadata(timer, "brokers to list transactions of")
    state_names = [s.value for s in states]
    pids = list(producer_ids)
    out: list[TransactionListing] = []

    def build(version: int) -> ListTransactionsRequest:
        if version < 1 and duration_ms >= 0:
            raise UnsupportedVersionError("list_transactions(duration_ms=...) needs ListTransactions v1 or later")
        return ListTransactionsRequest(state_filters=state_names, producer_id_filters=pids, duration_filter=duration_ms)

    for node in ctx.metadata.fetch().nodes:
        _, resp = ctx.send(ApiKey.LIST_TRANSACTIONS, build, _to(node), timer)
        assert isinstance(resp, ListTransactionsResponse)
        if resp.error_code:
            _raise(resp.error_code, f"listing the transactions of broker {node.id}")
        out.extend(TransactionListing(t.transactional_id, t.producer_id, TransactionState.parse(t.transaction_state))
                   for t in resp.transaction_states)
    return sorted(out, key=lambda t: t.transactional_id)


#: Partition errors after which abort_transaction looks the leader up again (Java AbortTransactionHandler:
#: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION; also LEADER_NOT_AVAILABLE during an election).
_ABORT_RETRY_WITH_METADATA = frozenset({3, 5, 6})


def abort_transaction(ctx: AdminContext, spec: AbortTransactionSpec, timer: Timer) -> None:
    """Write an ABORT marker for ``spec``'s producer to its partition's leader, as the transaction coordinator
    would: the partition's open transaction of that producer ends (its records are aborted and the last stable
    offset moves on). The leader fences a stale producer epoch (InvalidProducerEpochError) or coordinator
    epoch (TransactionCoordinatorFencedError), so the abort cannot end a newer transaction of the producer."""
    tp = TopicPartition(spec.topic_partition[0], spec.topic_partition[1])
    remaining: dict[TopicPartition, None] = {tp: None}
    request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=spec.producer_id, producer_epoch=spec.producer_epoch, transaction_result=False,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=tp[0], partition_indexes=[tp[1]])],
        coordinator_epoch=spec.coordinator_epoch)])

    def ask(leader_id: int, _tps: list[TopicPartition]) -> bool:
        _, resp = ctx.send(ApiKey.WRITE_TXN_MARKERS, lambda _v: request, ctx.broker_target(leader_id), timer)
        assert isinstance(resp, WriteTxnMarkersResponse)
        for marker in resp.markers:
            for t in marker.topics:
                for p in t.partitions:
                    if (t.name, p.partition_index) != tp:
                        continue
                    if p.error_code in _ABORT_RETRY_WITH_METADATA:
                        return True
                    if p.error_code:
                        raise broker_error(p.error_code, None, f"aborting the transaction of producer "
                                           f"{spec.producer_id} (epoch {spec.producer_epoch}) on {tp[0]}-{tp[1]}")
                    remaining.pop(tp, None)
                    return False
        return True  # the leader did not answer for the partition: look it up again

    ctx.ask_leaders(remaining, timer, f"aborting a transaction on {tp[0]}-{tp[1]}", ask)
