"""Java ``KafkaAdminClient.describeShareGroups``: ShareGroupDescribe (KIP-932) to each group's coordinator. A
group id that is not a share group fails with GroupIdNotFoundError, as in Java."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.group_types import ShareGroupDescription, ShareMemberDescription
from pykafka_client.admin.handlers.describe_consumer_groups import described_partitions
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument


@dataclass
class DescribeShareGroupsHandler:
    """Keys: group ids, one request each."""

    api_key = ApiKey.SHARE_GROUP_DESCRIBE
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> ShareGroupDescribeRequest:
        return ShareGroupDescribeRequest(group_ids=keys)

    def handle_response(self, node: Node, keys: list[str], response: ShareGroupDescribeResponse
                        ) -> ApiResult[str, ShareGroupDescription]:
        assert isinstance(response, ShareGroupDescribeResponse)
        result: ApiResult[str, ShareGroupDescription] = ApiResult()
        for g in response.groups:
            if g.error_code:
                result.coordinator_error(g.group_id, g.error_code,
                                         broker_error(g.error_code, g.error_message, f"share group {g.group_id!r}"))
                continue
            members = [
                ShareMemberDescription(m.member_id, m.rack_id, m.client_id, m.client_host, described_partitions(m.assignment),
                                       m.member_epoch, list(m.subscribed_topic_names))
                for m in g.members
            ]
            result.completed[g.group_id] = ShareGroupDescription(
                g.group_id, members, g.assignor_name, g.group_state, node, g.group_epoch, g.assignment_epoch)
        return result

    @staticmethod
    def call(ctx: AdminContext, group_ids: Iterable[str],
             timeout: float | None = None) -> dict[str, ShareGroupDescription]:
        """State, epochs, assignor and members of each share group; raises the first group's error after all
        were asked (GroupIdNotFoundError: not a share group)."""
        ids = list_argument("describe_share_groups", "group_ids", group_ids, str,
                            "a list of share group ids, e.g. ['billing-queue']")
        completed = ctx.run_call(lambda _timer: DescribeShareGroupsHandler(), ids, timeout)
        return {gid: completed[gid] for gid in ids if gid in completed}
