"""Java ``KafkaAdminClient.deleteShareGroups``: DeleteGroups to each share group's coordinator (the request
consumer groups are deleted with); the broker deletes an empty share group with its share partitions' state and
refuses one with members (GroupNotEmptyError)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.handlers.delete_consumer_groups import DeleteConsumerGroupsHandler
from pykafka_client.utils.arguments import list_argument


@dataclass
class DeleteShareGroupsHandler(DeleteConsumerGroupsHandler):
    """Keys: group ids, one request each."""

    @staticmethod
    def call(ctx: AdminContext, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty share groups; raises the first group's error after all were tried."""
        ids = list_argument("delete_share_groups", "group_ids", group_ids, str,
                            "a list of share group ids, e.g. ['billing-queue']")
        ctx.run_call(lambda _timer: DeleteShareGroupsHandler(), ids, timeout)
