"""ListGroups (Java ``KafkaAdminClient.listConsumerGroups``): to every broker of the metadata; optionally only
groups of some types (``classic``, ``consumer``: ListGroups v5's TypesFilter, KIP-848)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

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

    types: list[str] = field(default_factory=list)
    api_key = ApiKey.LIST_GROUPS
    lookup = AllBrokers("brokers to list groups of")

    def build_request(self, version: int, keys: list[int | None]) -> ListGroupsRequest:
        return ListGroupsRequest(types_filter=list(self.types))

    def handle_response(self, node: Node, keys: list[int | None], response: ListGroupsResponse
                        ) -> ApiResult[int | None, list[ConsumerGroupListing]]:
        assert isinstance(response, ListGroupsResponse)
        (broker_id,) = keys
        if response.error_code:
            raise broker_error(response.error_code, None, f"listing the groups of broker {broker_id}")
        listings = [ConsumerGroupListing(g.group_id, g.group_state, g.protocol_type, g.group_type or None)
                    for g in response.groups]
        return ApiResult(completed={broker_id: listings})

    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None,
             types: Iterable[str] | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker (of ``types`` when given), sorted by group id."""
        wanted = sorted({t.lower() for t in types or ()})
        completed = ctx.run_call(lambda _timer: ListConsumerGroupsHandler(wanted), [ALL_BROKERS], timeout)
        return sorted((g for listings in completed.values() for g in listings), key=lambda g: g.group_id)
