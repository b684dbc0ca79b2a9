"""DeleteTopics (Java ``KafkaAdminClient.deleteTopics``): to the controller (any broker while none is known)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import Controller
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument
from pykafka_client.utils.time import Timer


@dataclass
class DeleteTopicsHandler:
    """Keys: the topic names."""

    timer: Timer
    api_key = ApiKey.DELETE_TOPICS
    lookup = Controller()

    def build_request(self, version: int, keys: list[str]) -> DeleteTopicsRequest:
        timeout_ms = max(0, min(self.timer.remaining_ms(), 2**31 - 1))
        if version >= 6:
            return DeleteTopicsRequest(
                topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in keys], timeout_ms=timeout_ms
            )
        return DeleteTopicsRequest(topic_names=keys, timeout_ms=timeout_ms)

    def handle_response(self, node: Node, keys: list[str], response: DeleteTopicsResponse) -> ApiResult[str, None]:
        assert isinstance(response, DeleteTopicsResponse)
        result: ApiResult[str, None] = ApiResult()
        for r in response.responses:
            if r.error_code:
                result.failed.setdefault(r.name or "", broker_error(r.error_code, r.error_message, f"topic {r.name!r}"))
            else:
                result.completed[r.name or ""] = None
        return result

    @staticmethod
    def call(ctx: AdminContext, topics: Iterable[str], timeout: float | None = None) -> None:
        """Delete topics by name; raises the first topic's error."""
        names = list_argument("delete_topics", "topics", topics, str, "a list of topic names, e.g. ['orders']")
        if not names:
            return
        ctx.run_call(DeleteTopicsHandler, names, timeout, update_metadata=True)
