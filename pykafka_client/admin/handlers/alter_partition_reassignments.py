"""AlterPartitionReassignments (Java ``KafkaAdminClient.alterPartitionReassignments``, KIP-455): to the controller,
in one request."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import Controller
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import Timer


def timeout_ms(timer: Timer) -> int:
    return max(0, min(timer.remaining_ms(), 2**31 - 1))


def partitions_by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


@dataclass
class AlterPartitionReassignmentsHandler:
    """Keys: the partitions; ``targets`` the new replicas of each (None: cancel its reassignment)."""

    targets: Mapping[TopicPartition, Sequence[int] | None]
    timer: Timer
    api_key = ApiKey.ALTER_PARTITION_REASSIGNMENTS
    lookup = Controller()

    def build_request(self, version: int, keys: list[TopicPartition]) -> AlterPartitionReassignmentsRequest:
        return AlterPartitionReassignmentsRequest(timeout_ms=timeout_ms(self.timer), topics=[
            AlterPartitionReassignmentsRequest.ReassignableTopic(name=topic, partitions=[
                AlterPartitionReassignmentsRequest.ReassignablePartition(
                    partition_index=p, replicas=None if (r := self.targets[TopicPartition(topic, p)]) is None
                    else list(r))
                for p in ps])
            for topic, ps in partitions_by_topic(keys).items()])

    def handle_response(self, node: Node, keys: list[TopicPartition], response: AlterPartitionReassignmentsResponse
                        ) -> ApiResult[TopicPartition, None]:
        assert isinstance(response, AlterPartitionReassignmentsResponse)
        if response.error_code:
            failed: ApiResult[TopicPartition, None] = ApiResult()
            failed.controller_error(keys, response.error_code,
                                    broker_error(response.error_code, response.error_message, "alter_partition_reassignments"))
            return failed
        result: ApiResult[TopicPartition, None] = ApiResult()
        for t in response.responses:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code:
                    result.failed[tp] = broker_error(p.error_code, p.error_message, f"partition {tp}")
                else:
                    result.completed[tp] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, reassignments: Mapping[TopicPartition, Sequence[int] | None],
             timeout: float | None = None) -> None:
        """Move partitions to new replicas (None: cancel the partition's ongoing reassignment); raises the first
        partition's error. Returns once the controller accepted them: the move itself completes when the new
        replicas caught up (see list_partition_reassignments)."""
        if not reassignments:
            return
        ctx.run_call(lambda timer: AlterPartitionReassignmentsHandler(reassignments, timer), list(reassignments),
                     timeout, update_metadata=True)
