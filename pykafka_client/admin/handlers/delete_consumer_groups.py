"""DeleteGroups (Java ``KafkaAdminClient.deleteConsumerGroups``): to each group's coordinator."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class DeleteConsumerGroupsHandler:
    """Keys: group ids, one request each."""

    api_key = ApiKey.DELETE_GROUPS
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> DeleteGroupsRequest:
        return DeleteGroupsRequest(groups_names=keys)

    def handle_response(self, node: Node, keys: list[str], response: DeleteGroupsResponse) -> ApiResult[str, None]:
        assert isinstance(response, DeleteGroupsResponse)
        result: ApiResult[str, None] = ApiResult()
        for r in response.results:
            if r.error_code:
                result.coordinator_error(r.group_id, r.error_code, broker_error(r.error_code, None, f"group {r.group_id!r}"))
            else:
                result.completed[r.group_id] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty groups with their committed offsets; raises the first group's error after all were
        tried."""
        ids = list_argument("delete_consumer_groups", "group_ids", group_ids, str,
                            "a list of group ids, e.g. ['billing']")
        ctx.run_call(lambda _timer: DeleteConsumerGroupsHandler(), ids, timeout)
