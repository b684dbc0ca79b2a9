"""How the group member handles each coordinator response (Java: AbstractCoordinator's
FindCoordinatorResponseHandler, JoinGroupResponseHandler, SyncGroupResponseHandler,
HeartbeatResponseHandler, LeaveGroupResponseHandler).

Each handler gets the coordinator, the response body and the future to complete; it runs in
whichever thread polled the client and takes ``c.lock`` only for short state updates. The member
state moves only through ``c.transition_to`` (see member_state.py). AbstractCoordinator builds and
sends the requests and adapts the client futures (``_compose``); these functions are its handlers,
kept apart so the request flow and the error handling per API can each be read on their own.
"""

from __future__ import annotations

import logging
from typing import Any

from pykafka_client.consumer.group_member import GroupMember
from pykafka_client.consumer.member_state import NO_GENERATION, Generation, MemberState
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    MemberIdRequiredError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    for_code,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages.find_coordinator_response import FindCoordinatorResponse
from pykafka_client.protocol.messages.heartbeat_response import HeartbeatResponse
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.protocol.messages.leave_group_response import LeaveGroupResponse
from pykafka_client.protocol.messages.sync_group_response import SyncGroupResponse
from pykafka_client.structs import Node

log = logging.getLogger(__name__)

#: The coordinator gets its own connection id (so group traffic never queues behind fetches).
COORDINATOR_NODE_ID_BASE = 2**31 - 1


#: The coordinator is loading, moved or gone: forget it, the next call rediscovers it.
COORDINATOR_MOVED_ERRORS = (CoordinatorNotAvailableError, NotCoordinatorError)


def _forget_coordinator_and_fail(
    c: GroupMember, cls: type[BrokerResponseError], api: str, future: RequestFuture[Any]
) -> None:
    c.mark_coordinator_unknown(f"{cls.name} from {api}")
    future.raise_(cls())


class UnjoinedGroupError(RebalanceInProgressError):
    """The join finished but the member state changed meanwhile (e.g. the heartbeat thread reset it)."""


def handle_find_coordinator_response(
    c: GroupMember, body: FindCoordinatorResponse, future: RequestFuture[None]
) -> None:
    """FindCoordinator answered: remember the coordinator (single-key form, or the first entry of
    the v4+ ``coordinators`` list)."""
    if not isinstance(body, FindCoordinatorResponse):
        future.raise_(KafkaError("unexpected FindCoordinator response"))
        return
    err, node_id, host, port = body.error_code, body.node_id, body.host, body.port
    if body.coordinators:
        entry = body.coordinators[0]
        err, node_id, host, port = entry.error_code, entry.node_id, entry.host, entry.port
    if err == 0:
        with c.lock:
            c.coordinator = Node(COORDINATOR_NODE_ID_BASE - node_id, host, port)
            log.info("discovered group coordinator %s", c.coordinator)
            c.heartbeat.reset_session_timeout()
        future.complete(None)
    elif err == GroupAuthorizationFailedError.code:
        future.raise_(GroupAuthorizationFailedError(f"not authorized for group {c.rebalance_config.group_id}"))
    else:
        future.raise_(for_code(err)(f"FindCoordinator for group {c.rebalance_config.group_id} failed"))


def handle_join_group_response(c: GroupMember, body: JoinGroupResponse, future: RequestFuture[bytes]) -> None:
    """JoinGroup answered: on success move to COMPLETING_REBALANCE and run the leader's or the
    follower's SyncGroup; otherwise reset or rediscover as the error requires (Java JoinGroupResponseHandler)."""
    err = body.error_code
    if err == 0:
        if body.protocol_type is not None and body.protocol_type != c.protocol_type():
            future.raise_(InconsistentGroupProtocolError(f"JoinGroup returned protocol type {body.protocol_type}"))
            return
        with c.lock:
            if c.state is not MemberState.PREPARING_REBALANCE:
                future.raise_(UnjoinedGroupError("member state changed during JoinGroup"))
                return
            c.transition_to(MemberState.COMPLETING_REBALANCE)
            c.generation = Generation(body.generation_id, body.member_id, body.protocol_name)
            c.cond.notify_all()  # heartbeats resume while completing the rebalance
        if body.leader == body.member_id:
            c.on_join_leader(body).chain(future)
        else:
            c.on_join_follower().chain(future)
        return
    cls = for_code(err)
    if cls is MemberIdRequiredError:
        with c.lock:
            c.generation = Generation(-1, body.member_id, None)
        c.request_rejoin("need to re-join with the given member-id")
        future.raise_(MemberIdRequiredError(f"rejoin with member id {body.member_id}"))
    elif cls is UnknownMemberIdError:
        c.reset_state_and_generation("UNKNOWN_MEMBER_ID from JoinGroup", True)
        future.raise_(cls())
    elif cls in COORDINATOR_MOVED_ERRORS:
        _forget_coordinator_and_fail(c, cls, "JoinGroup", future)
    elif cls is RebalanceInProgressError:
        future.raise_(cls())
    elif cls.retriable:
        future.raise_(cls())
    else:  # fenced instance, group authorization, inconsistent protocol, max size, invalid session...
        future.raise_(cls(f"JoinGroup for group {c.rebalance_config.group_id} failed"))


def handle_sync_group_response(c: GroupMember, body: SyncGroupResponse, future: RequestFuture[bytes]) -> None:
    """SyncGroup answered: the assignment bytes, if the member is still completing this rebalance
    (Java SyncGroupResponseHandler)."""
    err = body.error_code
    if err == 0:
        with c.lock:
            if c.generation is not NO_GENERATION and c.state is MemberState.COMPLETING_REBALANCE:
                if body.protocol_name is not None and body.protocol_name != c.generation.protocol_name:
                    future.raise_(InconsistentGroupProtocolError(f"SyncGroup returned protocol {body.protocol_name}"))
                    return
                assignment = bytes(body.assignment)
            else:
                future.raise_(UnjoinedGroupError("generation was reset while syncing"))
                return
        future.complete(assignment)
        return
    cls = for_code(err)
    if cls is RebalanceInProgressError:
        c.request_rejoin("group is rebalancing during SyncGroup")
        future.raise_(cls())
    elif cls in (UnknownMemberIdError, IllegalGenerationError):
        c.reset_generation_on_response_error("SyncGroup", cls)
        future.raise_(cls())
    elif cls in COORDINATOR_MOVED_ERRORS:
        _forget_coordinator_and_fail(c, cls, "SyncGroup", future)
    else:
        future.raise_(cls(f"SyncGroup for group {c.rebalance_config.group_id} failed"))


def handle_heartbeat_response(
    c: GroupMember, sent_with: Generation, body: HeartbeatResponse, future: RequestFuture[None]
) -> None:
    """Heartbeat answered. A rebalance in progress matters only to a STABLE member (it rejoins); an
    unknown member or stale generation resets the generation the heartbeat was sent with, if it is
    still the current one."""
    err = body.error_code
    if err == 0:
        future.complete(None)
        return
    cls = for_code(err)
    if cls is RebalanceInProgressError:
        with c.lock:
            stable = c.state is MemberState.STABLE
        if stable:
            c.request_rejoin("group is already rebalancing")
            future.raise_(cls())
        else:
            future.complete(None)  # we are completing the rebalance ourselves
    elif cls in (IllegalGenerationError, UnknownMemberIdError, FencedInstanceIdError):
        with c.lock:
            unchanged = c.generation == sent_with
        if unchanged:
            c.reset_generation_on_response_error("Heartbeat", cls)
        future.raise_(cls())
    elif cls in COORDINATOR_MOVED_ERRORS:
        _forget_coordinator_and_fail(c, cls, "Heartbeat", future)
    else:
        future.raise_(cls("Heartbeat failed"))


def handle_leave_group_response(body: LeaveGroupResponse, future: RequestFuture[None]) -> None:
    """LeaveGroup answered: the first error, top level or per member (v3+), fails the future."""
    errors = [body.error_code] + [m.error_code for m in body.members]
    err = next((e for e in errors if e != 0), 0)
    if err == 0:
        future.complete(None)
    else:
        future.raise_(for_code(err)("LeaveGroup failed"))


__all__ = [
    "COORDINATOR_MOVED_ERRORS",
    "COORDINATOR_NODE_ID_BASE",
    "UnjoinedGroupError",
    "handle_find_coordinator_response",
    "handle_heartbeat_response",
    "handle_join_group_response",
    "handle_leave_group_response",
    "handle_sync_group_response",
]
