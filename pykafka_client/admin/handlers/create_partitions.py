"""CreatePartitions (Java ``KafkaAdminClient.createPartitions``): to the controller (any broker while none
is known)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import Controller
from pykafka_client.admin.types import NewPartitions
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import mapping_argument
from pykafka_client.utils.time import Timer


@dataclass
class CreatePartitionsHandler:
    """Keys: the topic names; ``new_partitions`` the NewPartitions of each."""

    new_partitions: Mapping[str, NewPartitions]
    validate_only: bool
    timer: Timer
    api_key = ApiKey.CREATE_PARTITIONS
    lookup = Controller()

    def build_request(self, version: int, keys: list[str]) -> CreatePartitionsRequest:
        return CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(
                    name=name,
                    count=np.total_count,
                    assignments=None
                    if np.new_assignments is None
                    else [
                        CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a))
                        for a in np.new_assignments
                    ],
                )
                for name, np in ((k, self.new_partitions[k]) for k in keys)
            ],
            timeout_ms=max(0, min(self.timer.remaining_ms(), 2**31 - 1)),
            validate_only=self.validate_only,
        )

    def handle_response(self, node: Node, keys: list[str], response: CreatePartitionsResponse) -> ApiResult[str, None]:
        assert isinstance(response, CreatePartitionsResponse)
        result: ApiResult[str, None] = ApiResult()
        for r in response.results:
            if r.error_code:
                result.failed.setdefault(r.name, broker_error(r.error_code, r.error_message, f"topic {r.name!r}"))
            else:
                result.completed[r.name] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, new_partitions: Mapping[str, NewPartitions], timeout: float | None = None,
             validate_only: bool = False) -> None:
        """Increase partition counts; raises the first topic's error."""
        mapping_argument(
            "create_partitions", "new_partitions", new_partitions,
            "a mapping of topic name to NewPartitions, e.g. {'orders': NewPartitions(6)}",
        )
        if not new_partitions:
            return
        ctx.run_call(lambda timer: CreatePartitionsHandler(new_partitions, validate_only, timer),
                     list(new_partitions), timeout, update_metadata=True)
