"""ListGroups for groups of every type (Java ``Admin.listGroups``, KIP-1043): the request and answer of
:mod:`list_consumer_groups`, with ``share`` among the types a caller may filter by."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.group_types import ConsumerGroupListing
from pykafka_client.admin.handlers.list_consumer_groups import ListConsumerGroupsHandler


@dataclass
class ListGroupsHandler(ListConsumerGroupsHandler):
    """Keys: broker ids (every broker); a broker-level error stops the call."""

    @staticmethod
    def call(ctx: AdminContext, timeout: float | None = None,
             types: Iterable[str] | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker (of ``types`` when given: ``classic``, ``consumer``, ``share``), sorted by
        group id."""
        return ListConsumerGroupsHandler.call(ctx, timeout, types)
