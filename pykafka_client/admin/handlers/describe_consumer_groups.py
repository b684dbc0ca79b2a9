"""Java ``KafkaAdminClient.describeConsumerGroups``: ConsumerGroupDescribe (KIP-848) to each group's coordinator;
the groups it does not know as consumer groups (GROUP_ID_NOT_FOUND), or all of them when the broker lacks the API,
are described by DescribeGroups (classic groups)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.group_types import CONSUMER, ConsumerGroupDescription, MemberDescription
from pykafka_client.admin.lookups import GROUP_COORDINATOR
from pykafka_client.errors import GroupIdNotFoundError, UnsupportedVersionError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
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
        with ctx.lock:
            timer = ctx.timer(timeout)
            try:
                first = ctx.run(ConsumerGroupDescribeHandler(), ids, timer)
            except UnsupportedVersionError:  # the coordinator predates KIP-848
                first = ApiResult()
            result: ApiResult[str, ConsumerGroupDescription] = ApiResult()
            result.failed.update({gid: e for gid, e in first.failed.items()
                                  if not isinstance(e, UnsupportedVersionError)})  # fmt: skip
            result.completed.update({gid: d for gid, d in first.completed.items() if d is not None})
            # not a consumer group, or a broker without KIP-848: DescribeGroups (Java does the same)
            classic = [gid for gid in ids if gid not in result.completed and gid not in result.failed]
            if classic:
                result.merge(ctx.run(DescribeConsumerGroupsHandler(), classic, timer))
        result.raise_first_error()
        return {gid: result.completed[gid] for gid in ids if gid in result.completed}


class _NamedPartitions(Protocol):
    @property
    def topic_name(self) -> str: ...
    @property
    def partitions(self) -> list[int]: ...


class DescribedAssignment(Protocol):
    """A member's assignment as ConsumerGroupDescribe and ShareGroupDescribe report it."""

    @property
    def topic_partitions(self) -> Sequence[_NamedPartitions]: ...


def described_partitions(assignment: DescribedAssignment | None) -> list[TopicPartition]:
    """The partitions of a described member's assignment, sorted."""
    if assignment is None:
        return []
    return sorted(TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions)


@dataclass
class ConsumerGroupDescribeHandler:
    """Keys: group ids, one request each; a group that is not a consumer group completes with None (the
    caller describes it with DescribeGroups)."""

    api_key = ApiKey.CONSUMER_GROUP_DESCRIBE
    lookup = GROUP_COORDINATOR

    def build_request(self, version: int, keys: list[str]) -> ConsumerGroupDescribeRequest:
        return ConsumerGroupDescribeRequest(group_ids=keys)

    def handle_response(self, node: Node, keys: list[str], response: ConsumerGroupDescribeResponse
                        ) -> ApiResult[str, ConsumerGroupDescription | None]:
        assert isinstance(response, ConsumerGroupDescribeResponse)
        result: ApiResult[str, ConsumerGroupDescription | None] = ApiResult()
        for g in response.groups:
            if g.error_code == GroupIdNotFoundError.code:
                result.completed[g.group_id] = None
                continue
            if g.error_code:
                result.coordinator_error(g.group_id, g.error_code,
                                         broker_error(g.error_code, g.error_message, f"group {g.group_id!r}"))
                continue
            members = [
                MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host, described_partitions(m.assignment),
                                  m.member_epoch, described_partitions(m.target_assignment))
                for m in g.members
            ]
            result.completed[g.group_id] = ConsumerGroupDescription(
                g.group_id, False, members, g.assignor_name, g.group_state, node, CONSUMER, g.group_epoch,
                g.assignment_epoch,
            )
        return result
