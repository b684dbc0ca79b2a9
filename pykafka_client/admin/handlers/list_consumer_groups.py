"""ListGroups (Java ``KafkaAdminClient.listConsumerGroups``): to every broker of the metadata."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult, EachBroker
from pykafka_client.admin.group_types import ConsumerGroupListing
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListGroupsRequest, ListGroupsResponse
from pykafka_client.structs import Node


@dataclass
class ListConsumerGroupsHandler:
    """Keys: broker ids; a broker-level error stops the call."""

    api_key = ApiKey.LIST_GROUPS
    lookup = EachBroker()

    def build_request(self, version: int, keys: list[int]) -> ListGroupsRequest:
        return ListGroupsRequest()

    def handle_response(self, node: Node, keys: list[int], response: ListGroupsResponse
                        ) -> ApiResult[int, list[ConsumerGroupListing]]:
        assert isinstance(response, ListGroupsResponse)
        (broker_id,) = keys
        if response.error_code:
            raise broker_error(response.error_code, None, f"listing the groups of broker {broker_id}")
        listings = [ConsumerGroupListing(g.group_id, g.group_state, g.protocol_type) for g in response.groups]
        return ApiResult(completed={broker_id: listings})

    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker, sorted by group id."""
        with ctx.lock:
            timer = ctx.timer(timeout)
            if not ctx.metadata.fetch().nodes or any(n.id < 0 for n in ctx.metadata.fetch().nodes):
                ctx.refresh_metadata(timer, "brokers to list groups of")
            ids = [broker.id for broker in ctx.metadata.fetch().nodes]
            result = ctx.run(ListConsumerGroupsHandler(), ids, timer)
            out = [listing for listings in result.completed.values() for listing in listings]
            return sorted(out, key=lambda g: g.group_id)
