"""ElectLeaders (Java ``KafkaAdminClient.electLeaders``, KIP-460): to the controller, in one request."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.alter_partition_reassignments import partitions_by_topic, timeout_ms
from pykafka_client.admin.lookups import Controller
from pykafka_client.admin.types import ElectionType
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ElectLeadersRequest, ElectLeadersResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import Timer

#: the one key of this call: the whole request
REQUEST = "elect"


@dataclass
class ElectLeadersHandler:
    """One key, :data:`REQUEST`; its value maps each partition to None (elected) or its error."""

    election_type: ElectionType
    partitions: list[TopicPartition] | None
    timer: Timer
    api_key = ApiKey.ELECT_LEADERS
    lookup = Controller()

    def build_request(self, version: int, keys: list[str]) -> ElectLeadersRequest:
        return ElectLeadersRequest(
            election_type=int(self.election_type),
            topic_partitions=None if self.partitions is None else [
                ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
                for t, ps in partitions_by_topic(self.partitions).items()],
            timeout_ms=timeout_ms(self.timer))

    def handle_response(self, node: Node, keys: list[str], response: ElectLeadersResponse
                        ) -> ApiResult[str, dict[TopicPartition, KafkaError | None]]:
        assert isinstance(response, ElectLeadersResponse)
        if response.error_code:
            failed: ApiResult[str, dict[TopicPartition, KafkaError | None]] = ApiResult()
            failed.controller_error(keys, response.error_code, broker_error(response.error_code, None, "elect_leaders"))
            return failed
        out: dict[TopicPartition, KafkaError | None] = {}
        for t in response.replica_election_results:
            for p in t.partition_result:
                tp = TopicPartition(t.topic, p.partition_id)
                out[tp] = broker_error(p.error_code, p.error_message, f"partition {tp}") if p.error_code else None
        return ApiResult(completed={REQUEST: out})

    @staticmethod
    def call(ctx: AdminContext, election_type: ElectionType | int, partitions: Iterable[TopicPartition] | None = None,
             timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders now; per partition None (elected) or why not (ELECTION_NOT_NEEDED, ...). ``partitions``
        None: every partition, and only those elected are returned."""
        wanted = None if partitions is None else list(partitions)
        kind = ElectionType(int(election_type))
        return ctx.run_call(lambda timer: ElectLeadersHandler(kind, wanted, timer), [REQUEST], timeout,
                            update_metadata=True)[REQUEST]
