"""abort_transaction (Java ``KafkaAdminClient.abortTransaction``): the ABORT marker of one producer's open
transaction on a partition (a WriteTxnMarkers request, as a transaction coordinator would send it), to the
partition's leader."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import PartitionLeaders
from pykafka_client.admin.types import AbortTransactionSpec
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from pykafka_client.structs import Node, TopicPartition


@dataclass
class AbortTransactionHandler:
    """One key, the spec's partition. The leader fences a stale producer epoch (InvalidProducerEpochError) or
    coordinator epoch (TransactionCoordinatorFencedError), so the abort cannot end a newer transaction of the
    producer; a leader that moved is looked up again."""

    spec: AbortTransactionSpec
    api_key = ApiKey.WRITE_TXN_MARKERS
    lookup = PartitionLeaders("leader for abort_transaction")

    def build_request(self, version: int, keys: list[TopicPartition]) -> WriteTxnMarkersRequest:
        (tp,) = keys
        return WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=self.spec.producer_id, producer_epoch=self.spec.producer_epoch, transaction_result=False,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=tp[0], partition_indexes=[tp[1]])],
            coordinator_epoch=self.spec.coordinator_epoch)])

    def handle_response(self, node: Node, keys: list[TopicPartition], response: WriteTxnMarkersResponse
                        ) -> ApiResult[TopicPartition, None]:
        assert isinstance(response, WriteTxnMarkersResponse)
        (tp,) = keys
        result: ApiResult[TopicPartition, None] = ApiResult()
        for marker in response.markers:
            for t in marker.topics:
                for p in t.partitions:
                    if (t.name, p.partition_index) != tp:
                        continue
                    if p.error_code:
                        result.partition_error(tp, p.error_code, broker_error(
                            p.error_code, None, f"aborting the transaction of producer {self.spec.producer_id} "
                            f"(epoch {self.spec.producer_epoch}) on {tp[0]}-{tp[1]}"))
                    else:
                        result.completed[tp] = None
        result.look_up_unanswered(keys)
        return result

    @staticmethod
    def call(ctx: AdminContext, spec: AbortTransactionSpec, timeout: float | None = None) -> None:
        """Write an ABORT marker for ``spec``'s producer to its partition's leader; raises its error."""
        if not isinstance(spec, AbortTransactionSpec):
            raise TypeError(f"abort_transaction(spec=...) takes an AbortTransactionSpec, not {type(spec).__name__}")
        tp = TopicPartition(spec.topic_partition[0], spec.topic_partition[1])
        ctx.run_call(lambda _timer: AbortTransactionHandler(spec), [tp], timeout)
