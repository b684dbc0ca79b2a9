"""DescribeGroups (Java ``KafkaAdminClient.describeConsumerGroups``): to each group's coordinator."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.group_types import ConsumerGroupDescription, MemberDescription
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse
from pykafka_client.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykafka_client.protocol.types import Reader
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.arguments import list_argument


def assigned_partitions(member_assignment: bytes) -> list[TopicPartition]:
    """The partitions in a consumer-protocol member assignment (int16 version, then the assignment)."""
    if not member_assignment:
        return []
    r = Reader(member_assignment)
    version = min(max(r.read_int16(), 0), 3)
    data = ConsumerProtocolAssignment.read(r, version)
    return sorted(TopicPartition(t.topic, p) for t in data.assigned_partitions for p in t.partitions)


@dataclass
class DescribeConsumerGroupsHandler:
    """Keys: group ids, one request each."""

    api_key = ApiKey.DESCRIBE_GROUPS
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> DescribeGroupsRequest:
        return DescribeGroupsRequest(groups=keys)

    def handle_response(self, node: Node, keys: list[str], response: DescribeGroupsResponse
                        ) -> ApiResult[str, ConsumerGroupDescription]:
        assert isinstance(response, DescribeGroupsResponse)
        result: ApiResult[str, ConsumerGroupDescription] = ApiResult()
        for g in response.groups:
            if g.error_code:
                result.coordinator_error(g.group_id, g.error_code, broker_error(g.error_code, None, f"group {g.group_id!r}"))
                continue
            members = [
                MemberDescription(
                    m.member_id, m.group_instance_id, m.client_id, m.client_host,
                    assigned_partitions(m.member_assignment) if g.protocol_type == "consumer" else [],
                )
                for m in g.members
            ]
            result.completed[g.group_id] = ConsumerGroupDescription(
                g.group_id, not g.protocol_type, members, g.protocol_data, g.group_state, node
            )
        return result

    @staticmethod
    def call(ctx: AdminContext, group_ids: Iterable[str],
             timeout: float | None = None) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members of each group; raises the first group's error."""
        ids = list_argument("describe_consumer_groups", "group_ids", group_ids, str,
                            "a list of group ids, e.g. ['billing']")
        return ctx.run_call(lambda _timer: DescribeConsumerGroupsHandler(), ids, timeout)
