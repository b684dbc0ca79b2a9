"""ListPartitionReassignments (Java ``KafkaAdminClient.listPartitionReassignments``, KIP-455): to the controller,
in one request."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.alter_partition_reassignments import partitions_by_topic, timeout_ms
from pykafka_client.admin.lookups import Controller
from pykafka_client.admin.types import PartitionReassignment
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import Timer

#: the one key of a list call: the whole request
LIST_REQUEST = "reassignments"


@dataclass
class ListPartitionReassignmentsHandler:
    """One key, :data:`LIST_REQUEST`; its value maps each reassigned partition to its PartitionReassignment."""

    partitions: list[TopicPartition] | None
    timer: Timer
    api_key = ApiKey.LIST_PARTITION_REASSIGNMENTS
    lookup = Controller()

    def build_request(self, version: int, keys: list[str]) -> ListPartitionReassignmentsRequest:
        return ListPartitionReassignmentsRequest(timeout_ms=timeout_ms(self.timer), topics=None
                                                 if self.partitions is None else [
            ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
            for t, ps in partitions_by_topic(self.partitions).items()])

    def handle_response(self, node: Node, keys: list[str], response: ListPartitionReassignmentsResponse
                        ) -> ApiResult[str, dict[TopicPartition, PartitionReassignment]]:
        assert isinstance(response, ListPartitionReassignmentsResponse)
        if response.error_code:
            failed: ApiResult[str, dict[TopicPartition, PartitionReassignment]] = ApiResult()
            failed.controller_error(keys, response.error_code,
                                    broker_error(response.error_code, response.error_message, "list_partition_reassignments"))
            return failed
        out = {TopicPartition(t.name, p.partition_index): PartitionReassignment(
                   list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
               for t in response.topics for p in t.partitions}
        return ApiResult(completed={LIST_REQUEST: out})

    @staticmethod
    def call(ctx: AdminContext, partitions: Iterable[TopicPartition] | None = None, timeout: float | None = None
             ) -> dict[TopicPartition, PartitionReassignment]:
        """The ongoing reassignments (of ``partitions``; None: all)."""
        wanted = None if partitions is None else list(partitions)
        return ctx.run_call(lambda timer: ListPartitionReassignmentsHandler(wanted, timer), [LIST_REQUEST],
                            timeout)[LIST_REQUEST]
