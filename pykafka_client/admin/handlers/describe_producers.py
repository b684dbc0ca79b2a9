"""DescribeProducers (Java ``KafkaAdminClient.describeProducers``): to each partition's leader, one request per
leader."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import asked_partitions, broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import PartitionLeaders
from pykafka_client.admin.types import ProducerState
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeProducersRequest, DescribeProducersResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.arguments import list_argument


def producer_states(p: DescribeProducersResponse.PartitionResponse) -> list[ProducerState]:
    return [ProducerState(
        producer_id=s.producer_id, producer_epoch=s.producer_epoch, last_sequence=s.last_sequence,
        last_timestamp=s.last_timestamp,
        coordinator_epoch=s.coordinator_epoch if s.coordinator_epoch >= 0 else None,
        current_transaction_start_offset=s.current_txn_start_offset if s.current_txn_start_offset >= 0 else None)
        for s in p.active_producers]


@dataclass
class DescribeProducersHandler:
    """Keys: the partitions; a partition whose leader moved is looked up again."""

    api_key = ApiKey.DESCRIBE_PRODUCERS
    lookup = PartitionLeaders("leader for describe_producers")

    def build_request(self, version: int, keys: list[TopicPartition]) -> DescribeProducersRequest:
        by_topic: dict[str, list[int]] = {}
        for tp in keys:
            by_topic.setdefault(tp[0], []).append(tp[1])
        return DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic.items()])

    def handle_response(self, node: Node, keys: list[TopicPartition], response: DescribeProducersResponse
                        ) -> ApiResult[TopicPartition, list[ProducerState]]:
        assert isinstance(response, DescribeProducersResponse)
        result: ApiResult[TopicPartition, list[ProducerState]] = ApiResult()
        for tp, p in asked_partitions(response.topics, keys):
            if p.error_code:
                error = broker_error(p.error_code, p.error_message, f"partition {tp[0]}-{tp[1]}")
                result.partition_error(tp, p.error_code, error)
            else:
                result.completed[tp] = producer_states(p)
        result.look_up_unanswered(keys)
        return result

    @staticmethod
    def call(ctx: AdminContext, partitions: Iterable[tuple[str, int]],
             timeout: float | None = None) -> dict[TopicPartition, list[ProducerState]]:
        """The active producers of each partition; raises the first partition's error after all were asked."""
        wanted = list_argument("describe_producers", "partitions", partitions, tuple,
                               "an iterable of TopicPartition, e.g. [TopicPartition('orders', 0)]")
        keys = list(dict.fromkeys(TopicPartition(tp[0], tp[1]) for tp in wanted))
        if not keys:
            return {}
        return ctx.run_call(lambda _timer: DescribeProducersHandler(), keys, timeout)
