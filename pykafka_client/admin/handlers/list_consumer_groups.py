"""ListGroups (Java ``KafkaAdminClient.listConsumerGroups``): to every broker of the metadata."""

from __future__ import annotations

from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.group_types import ConsumerGroupListing
from pykafka_client.admin.lookups import ALL_BROKERS, AllBrokers
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListGroupsRequest, ListGroupsResponse
from pykafka_client.structs import Node


@dataclass
class ListConsumerGroupsHandler:
    """Keys: broker ids (:data:`ALL_BROKERS`: every broker); a broker-level error stops the call."""

    api_key = ApiKey.LIST_GROUPS
    lookup = AllBrokers("brokers to list groups of")

    def build_request(self, version: int, keys: list[int | None]) -> ListGroupsRequest:
        return ListGroupsRequest()

    def handle_response(self, node: Node, keys: list[int | None], response: ListGroupsResponse
                        ) -> ApiResult[int | None, list[ConsumerGroupListing]]:
        assert isinstance(response, ListGroupsResponse)
        (broker_id,) = keys
        if response.error_code:
            raise broker_error(response.error_code, None, f"listing the groups of broker {broker_id}")
        listings = [ConsumerGroupListing(g.group_id, g.group_state, g.protocol_type) for g in response.groups]
        return ApiResult(completed={broker_id: listings})

    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker, sorted by group id."""
        completed = ctx.run_call(lambda _timer: ListConsumerGroupsHandler(), [ALL_BROKERS], timeout)
        return sorted((g for listings in completed.values() for g in listings), key=lambda g: g.group_id)
