"""Shared by ConsumerGroupDescribe and ShareGroupDescribe: the per-group checks around describing one group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.describe_groups import AUTHORIZED_OPERATIONS_OMITTED
from mini_broker.server.kafka_apis import KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError, GroupIdNotFoundError
from pykafka_client.protocol.acl import AclOperation, ResourceType

D = TypeVar("D")


def describe_each(apis: KafkaApis, request: Request, group_ids: Iterable[str], include_authorized_operations: bool,
                  kind: str, inactive_error: Callable[[str], int | None], describe: Callable[[str, int], D | None],
                  failed: Callable[[str, int, str | None, int], D]) -> list[D]:
    """Per group id, as Kafka answers: ``failed(group id, GROUP_AUTHORIZATION_FAILED, why, omitted operations)``
    without DESCRIBE on the group; ``failed(..., inactive error, None, ops)`` while the coordinator does not
    serve; ``failed(..., GROUP_ID_NOT_FOUND, why, ops)`` when ``describe(group id, ops)`` finds no ``kind`` group;
    else what ``describe`` made. ``ops``: the principal's operations on the group when asked for."""
    auth = apis.broker.auth(request)
    out: list[D] = []
    for group_id in group_ids:
        if not auth.group(AclOperation.DESCRIBE, group_id):
            out.append(failed(group_id, int(GroupAuthorizationFailedError.code),
                              f"DESCRIBE on group {group_id} is not allowed for this principal",
                              AUTHORIZED_OPERATIONS_OMITTED))
            continue
        ops = (auth.operations(ResourceType.GROUP, group_id) if include_authorized_operations
               else AUTHORIZED_OPERATIONS_OMITTED)
        error = inactive_error(group_id)
        described = None if error is not None else describe(group_id, ops)
        if error is not None:
            out.append(failed(group_id, error, None, ops))
        elif described is None:
            out.append(failed(group_id, int(GroupIdNotFoundError.code), f"Group {group_id} is not a {kind} group here.",
                              ops))
        else:
            out.append(described)
    return out
