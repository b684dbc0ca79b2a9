"""DeleteShareGroupOffsets (Java ``KafkaAdminClient.deleteShareGroupOffsets``, KIP-932): to the share group's
coordinator, forget the group's share partitions of whole topics (they start again at
``share.auto.offset.reset``); the group must be empty (GroupNotEmptyError otherwise)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.handlers.list_share_group_offsets import group_failed
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class DeleteShareGroupOffsetsHandler:
    """One key, the group id; ``topics`` those whose share partitions go."""

    topics: list[str]
    api_key = ApiKey.DELETE_SHARE_GROUP_OFFSETS
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> DeleteShareGroupOffsetsRequest:
        (group_id,) = keys
        return DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[
            DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in self.topics])

    def handle_response(self, node: Node, keys: list[str], response: DeleteShareGroupOffsetsResponse
                        ) -> ApiResult[str, None]:
        assert isinstance(response, DeleteShareGroupOffsetsResponse)
        (group_id,) = keys
        result: ApiResult[str, None] = ApiResult()
        if group_failed(result, group_id, response.error_code, response.error_message, "deleting the offsets of"):
            return result
        for t in response.responses:
            if t.error_code:
                result.fail(group_id, broker_error(
                    t.error_code, t.error_message, f"deleting the offsets of topic {t.topic_name!r} in share group "
                                                   f"{group_id!r}"))
                return result
        result.completed[group_id] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, group_id: str, topics: Iterable[str], timeout: float | None = None) -> None:
        """Delete the share-partition state of ``topics`` from an empty share group."""
        names = list_argument("delete_share_group_offsets", "topics", topics, str,
                              "a list of topic names, e.g. ['orders']")
        if not names:
            return
        ctx.run_call(lambda _timer: DeleteShareGroupOffsetsHandler(list(dict.fromkeys(names))), [group_id], timeout)
