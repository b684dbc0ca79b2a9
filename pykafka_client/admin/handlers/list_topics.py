"""List topics (Java ``KafkaAdminClient.listTopics``): a Metadata request for all topics, to any broker."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import LeastLoaded
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse
from pykafka_client.structs import Node

#: the one key of this call: the whole cluster
CLUSTER = "cluster"


@dataclass
class ListTopicsHandler:
    """One key, :data:`CLUSTER`: its value is the set of non-internal topic names."""

    api_key = ApiKey.METADATA
    lookup = LeastLoaded()

    def build_request(self, version: int, keys: list[str]) -> MetadataRequest:
        return MetadataRequest(topics=None, allow_auto_topic_creation=False)

    def handle_response(self, node: Node, keys: list[str], response: MetadataResponse) -> ApiResult[str, set[str]]:
        assert isinstance(response, MetadataResponse)
        names = {t.name for t in response.topics if t.name and not t.is_internal and not t.error_code}
        return ApiResult(completed={CLUSTER: names})

    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None) -> set[str]:
        """Names of all non-internal topics."""
        return ctx.run_call(lambda _timer: ListTopicsHandler(), [CLUSTER], timeout)[CLUSTER]
