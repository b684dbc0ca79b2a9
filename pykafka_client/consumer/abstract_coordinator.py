"""Group membership with the classic protocol (Java: AbstractCoordinator).

Finds the group coordinator (FindCoordinator), joins the group (JoinGroup, then SyncGroup, with the
leader computing the assignment), keeps the membership alive from a heartbeat thread and leaves the
group on close (LeaveGroup). Subclasses provide the embedded protocol (``metadata``,
``perform_assignment``) and the rebalance hooks (``on_join_prepare``, ``on_join_complete``).

Threads and locks (see docs/ARCHITECTURE.md, "Threads and lock order"):
* ``self.lock`` (an RLock with a Condition) guards the member state, generation, coordinator and
  heartbeat timers. It is held only for short state updates: never while polling the network
  client, never while running user callbacks (rebalance listener, commit callbacks). It may be held
  while *sending* (``client.send`` takes the ConsumerNetworkClient lock): order is coordinator lock ->
  client lock, and the client never calls back while holding its own lock.
* The application thread drives joins/syncs from ``poll()``; the heartbeat thread only sends
  heartbeats, notices session/poll timeouts and polls the client without wakeups. Response handlers
  run in whichever thread polled; they take ``self.lock`` briefly.
* Rebalance callbacks therefore run in the application thread with no internal lock held, so they
  may call back into the consumer (commit_sync, seek, ...), and a slow callback never blocks the
  heartbeat thread.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any

from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.group_rebalance_config import GroupMembershipOperation, GroupRebalanceConfig
from pykafka_client.consumer.group_response_handlers import (
    handle_find_coordinator_response,
    handle_heartbeat_response,
    handle_join_group_response,
    handle_leave_group_response,
    handle_sync_group_response,
)
from pykafka_client.consumer.heartbeat import Heartbeat
from pykafka_client.consumer.heartbeat_thread import HeartbeatThread
from pykafka_client.consumer.leave_group import LeaveGroupRequestBuilder
from pykafka_client.consumer.member_state import NO_GENERATION, Generation, MemberState, check_transition
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    DisconnectError,
    IllegalGenerationError,
    MemberIdRequiredError,
    NoAvailableBrokersError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.exponential_backoff import ExponentialBackoff
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from pykafka_client.protocol.messages.heartbeat_request import HeartbeatRequest
from pykafka_client.protocol.messages.join_group_request import JoinGroupRequest
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.protocol.messages.sync_group_request import SyncGroupRequest
from pykafka_client.structs import Node
from pykafka_client.utils.time import Time, Timer

log = logging.getLogger(__name__)

#: JoinGroup may legitimately wait for the whole rebalance: its timeout is raised above it.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000
_FIND_COORDINATOR_MAX_VERSION = 3  # single-key form (``key``); v4+ batches keys


def is_retriable(exc: BaseException) -> bool:
    """True for a KafkaError whose class says a retry may succeed."""
    return isinstance(exc, KafkaError) and exc.retriable


class AbstractCoordinator(ABC):
    """See module docstring."""

    def __init__(self, config: GroupRebalanceConfig, client: ConsumerClient, time: Time) -> None:
        self.rebalance_config = config
        self.client = client
        self.time = time
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.heartbeat = Heartbeat(
            time, config.session_timeout_ms, config.heartbeat_interval_ms, config.rebalance_timeout_ms,
            config.retry_backoff_ms,
        )  # fmt: skip
        self.retry_backoff = ExponentialBackoff(config.retry_backoff_ms, 2, config.retry_backoff_max_ms, 0.2)
        self._state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.coordinator: Node | None = None
        self._find_coordinator_future: RequestFuture[None] | None = None
        self._join_future: RequestFuture[bytes] | None = None
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.needs_join_prepare = True
        self._last_rebalance_start_ms = -1
        self._heartbeat_thread: HeartbeatThread | None = None
        self.closed = False
        self.heartbeat_failure: BaseException | None = None

    # -- member state --------------------------------------------------------------------------

    @property
    def state(self) -> MemberState:
        return self._state

    def transition_to(self, target: MemberState) -> None:
        """The only way the member state changes (see member_state.VALID_TRANSITIONS); under ``lock``."""
        with self.lock:
            check_transition(self._state, target)
            self._state = target

    # -- hooks -----------------------------------------------------------------------------------

    @abstractmethod
    def protocol_type(self) -> str: ...

    @abstractmethod
    def metadata(self) -> list[tuple[str, bytes]]:
        """The (protocol name, metadata) pairs this member supports, in preference order."""

    @abstractmethod
    def on_join_prepare(self, timer: Timer, generation: int, member_id: str) -> bool:
        """Before (re)joining; runs in the application thread with no lock held. False = not ready yet."""

    @abstractmethod
    def perform_assignment(
        self,
        leader_id: str,
        protocol: str,
        members: list[JoinGroupResponse.JoinGroupResponseMember],
        skip_assignment: bool,
    ) -> dict[str, bytes]:
        """As leader: the assignment bytes for each member."""

    @abstractmethod
    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        """After a successful SyncGroup; application thread, no lock held."""

    def on_leave_prepare(self) -> None:
        """Before leaving the group (close/unsubscribe)."""
        return None

    # -- coordinator discovery ---------------------------------------------------------------

    def check_and_get_coordinator(self) -> Node | None:
        with self.lock:
            if self.coordinator is not None and self.client.is_unavailable(self.coordinator):
                self.mark_coordinator_unknown("coordinator unavailable", disconnect=True)
                return None
            return self.coordinator

    def coordinator_unknown(self) -> bool:
        return self.check_and_get_coordinator() is None

    def mark_coordinator_unknown(self, cause: str, disconnect: bool = False) -> None:
        with self.lock:
            old = self.coordinator
            if old is not None:
                log.info("group coordinator %s is unavailable or invalid (%s): will attempt rediscovery", old, cause)
                self.coordinator = None
                if disconnect:
                    self.client.disconnect_async(old)

    def lookup_coordinator(self) -> RequestFuture[None]:
        """The in-progress FindCoordinator future (shared by concurrent callers), or a new one.
        Fails at once with NoAvailableBrokersError when no broker is known."""
        with self.lock:
            if self._find_coordinator_future is None:
                node = self.client.least_loaded_node()
                if node is None:
                    return RequestFuture.failure(
                        NoAvailableBrokersError("no brokers available to find the coordinator")
                    )
                self._find_coordinator_future = self._send_find_coordinator_request(node)
            return self._find_coordinator_future

    def _clear_find_coordinator_future(self) -> None:
        with self.lock:
            self._find_coordinator_future = None

    def _send_find_coordinator_request(self, node: Node) -> RequestFuture[None]:
        request = FindCoordinatorRequest(key=self.rebalance_config.group_id, key_type=0)
        future: RequestFuture[None] = RequestFuture()
        sent = self.client.send(node, request, latest_allowed_version=_FIND_COORDINATOR_MAX_VERSION)

        def on_success(response: ClientResponse) -> None:
            self._clear_find_coordinator_future()
            handle_find_coordinator_response(self, response.response_body, future)

        def on_failure(exc: BaseException) -> None:
            self._clear_find_coordinator_future()
            future.raise_(exc)

        sent.add_callbacks(on_success, on_failure)
        return future

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Block until the coordinator is known or the timer expires (True if known). Retriable
        failures back off exponentially (``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms``)."""
        if not self.coordinator_unknown():
            return True
        attempts = 0
        while True:
            future = self.lookup_coordinator()
            self.client.poll_future(future, timer)
            if not future.is_done():
                break  # timer expired
            if future.failed():
                exc = future.exception()
                if not is_retriable(exc):
                    raise exc
                log.debug("coordinator discovery failed, refreshing metadata / backing off: %s", exc)
                attempts += 1
                if isinstance(exc, NoAvailableBrokersError) or (isinstance(exc, KafkaError) and exc.invalid_metadata):
                    self.client.await_metadata_update(timer)
                else:
                    timer.sleep(self.retry_backoff.backoff(attempts - 1))
            else:
                coordinator = self.check_and_get_coordinator()
                if coordinator is not None:
                    return True
                attempts += 1
                timer.sleep(self.retry_backoff.backoff(attempts - 1))
            timer.update()
            if timer.is_expired():
                break
        return not self.coordinator_unknown()

    # -- join / sync -------------------------------------------------------------------------

    def request_rejoin(self, reason: str) -> None:
        with self.lock:
            self.rejoin_reason = reason
            self.rejoin_needed = True

    def rejoin_needed_or_pending(self) -> bool:
        with self.lock:
            return self.rejoin_needed or self._join_future is not None

    def rebalance_in_progress(self) -> bool:
        with self.lock:
            return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def generation_if_stable(self) -> Generation | None:
        with self.lock:
            return self.generation if self.state is MemberState.STABLE else None

    def generation_snapshot(self) -> Generation:
        with self.lock:
            return self.generation

    def reset_state_and_generation(self, reason: str, should_reset_member_id: bool) -> None:
        with self.lock:
            log.info("resetting generation (%s)", reason)
            self.transition_to(MemberState.UNJOINED)
            if should_reset_member_id:
                self.generation = NO_GENERATION
            else:
                self.generation = Generation(-1, self.generation.member_id, None)

    def reset_generation_on_response_error(self, api: str, error: type[KafkaError]) -> None:
        self.reset_state_and_generation(f"encountered {error.__name__} from {api} response", True)
        self.request_rejoin(f"encountered {error.__name__} from {api} response")

    def ensure_active_group(self, timer: Timer) -> bool:
        """Join (or rejoin) if needed; starts the heartbeat thread on first use."""
        if not self.ensure_coordinator_ready(timer):
            return False
        self.start_heartbeat_thread_if_needed()
        return self.join_group_if_needed(timer)

    def start_heartbeat_thread_if_needed(self) -> None:
        with self.lock:
            if self._heartbeat_thread is None and not self.closed:
                self._heartbeat_thread = HeartbeatThread(self)
                self._heartbeat_thread.start()

    def join_group_if_needed(self, timer: Timer) -> bool:
        """Run JoinGroup/SyncGroup until stable or the timer expires; True when joined."""
        while self.rejoin_needed_or_pending():
            if not self.ensure_coordinator_ready(timer):
                return False
            if self.needs_join_prepare:
                # No lock: on_join_prepare runs user callbacks. needs_join_prepare is only touched here.
                self.needs_join_prepare = False
                gen = self.generation_snapshot()
                if not self.on_join_prepare(timer, gen.generation_id, gen.member_id):
                    self.needs_join_prepare = True
                    return False
            future = self._initiate_join_group()
            self.client.poll_future(future, timer)
            if not future.is_done():
                return False
            if future.succeeded():
                with self.lock:
                    gen = self.generation
                    protocol = gen.protocol_name
                    self._join_future = None
                self.needs_join_prepare = True
                if protocol is not None:
                    self.on_join_complete(gen.generation_id, gen.member_id, protocol, future.value())
            else:
                with self.lock:
                    self._join_future = None
                exc = future.exception()
                if isinstance(
                    exc, (UnknownMemberIdError, RebalanceInProgressError, IllegalGenerationError, MemberIdRequiredError)
                ):
                    continue  # retry at once (MEMBER_ID_REQUIRED: now with the member id)
                if not is_retriable(exc):
                    raise exc
                timer.sleep(self.rebalance_config.retry_backoff_ms)
            timer.update()
            if timer.is_expired():
                return not self.rejoin_needed_or_pending()
        return True

    def _initiate_join_group(self) -> RequestFuture[bytes]:
        with self.lock:
            if self._join_future is None:
                self.transition_to(MemberState.PREPARING_REBALANCE)
                self._last_rebalance_start_ms = self.time.hi_res_clock_ms()
                sent = self._send_join_group_request()
                # the future the caller waits on completes only after the member state moved: the response may be
                # handled on the heartbeat thread, and a caller that saw the request's own future done before its
                # listener ran started the next join from COMPLETING_REBALANCE (IllegalStateError)
                future: RequestFuture[bytes] = RequestFuture()

                def on_success(assignment: bytes) -> None:
                    with self.lock:
                        if self.state is MemberState.COMPLETING_REBALANCE:
                            self.transition_to(MemberState.STABLE)
                            self.rejoin_needed = False
                            self.heartbeat.reset_timeouts()
                            self.cond.notify_all()
                    future.complete(assignment)

                def on_failure(exc: BaseException) -> None:
                    with self.lock:
                        if self.state is not MemberState.STABLE:
                            self.transition_to(MemberState.UNJOINED)
                    future.raise_(exc)

                self._join_future = future
                sent.add_callbacks(on_success, on_failure)
            return self._join_future

    def join_group_request_timeout_ms(self) -> int:
        """JoinGroup may wait for the whole rebalance: max(request.timeout.ms, rebalance timeout + 5 s)."""
        cfg = self.rebalance_config
        return max(cfg.request_timeout_ms, cfg.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)

    def _send_join_group_request(self) -> RequestFuture[bytes]:
        coordinator = self.coordinator
        if coordinator is None:
            return RequestFuture.failure(CoordinatorNotAvailableError())
        cfg = self.rebalance_config
        request = JoinGroupRequest(
            group_id=cfg.group_id,
            session_timeout_ms=cfg.session_timeout_ms,
            rebalance_timeout_ms=cfg.rebalance_timeout_ms,
            member_id=self.generation.member_id,
            group_instance_id=cfg.group_instance_id,
            protocol_type=self.protocol_type(),
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in self.metadata()],
            reason=self.rejoin_reason[:255] if self.rejoin_reason else None,
        )
        log.info("(re-)joining group %s (reason: %s)", cfg.group_id, self.rejoin_reason)
        self.rejoin_reason = ""
        sent = self.client.send(
            coordinator,
            request,
            self.join_group_request_timeout_ms(),
            oldest_allowed_version=cfg.oldest_allowed_version(ApiKey.JOIN_GROUP),
        )
        return self._compose(sent, partial(handle_join_group_response, self), "JoinGroup")

    def _compose(
        self,
        sent: RequestFuture[ClientResponse],
        handler: Callable[[Any, RequestFuture[Any]], None],
        api: str,
    ) -> RequestFuture[Any]:
        """Adapt a client future: run ``handler(body, future)`` on a response; on a disconnect mark
        the coordinator unknown. The member id is kept either way (retry with the same id)."""
        future: RequestFuture[Any] = RequestFuture()

        def on_success(response: ClientResponse) -> None:
            try:
                handler(response.response_body, future)
            except Exception as e:
                if not future.is_done():
                    future.raise_(e)

        def on_failure(exc: BaseException) -> None:
            if isinstance(exc, DisconnectError):
                self.mark_coordinator_unknown(f"disconnected during {api}", disconnect=False)
            future.raise_(exc)

        sent.add_callbacks(on_success, on_failure)
        return future

    def on_join_follower(self) -> RequestFuture[bytes]:
        return self._send_sync_group_request([])

    def on_join_leader(self, body: JoinGroupResponse) -> RequestFuture[bytes]:
        try:
            assignments = self.perform_assignment(
                body.leader, body.protocol_name or "", body.members, body.skip_assignment
            )
        except Exception as e:
            return RequestFuture.failure(e)
        return self._send_sync_group_request(
            [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()]
        )

    def _send_sync_group_request(
        self, assignments: list[SyncGroupRequest.SyncGroupRequestAssignment]
    ) -> RequestFuture[bytes]:
        coordinator = self.coordinator
        if coordinator is None:
            return RequestFuture.failure(CoordinatorNotAvailableError())
        gen = self.generation
        request = SyncGroupRequest(
            group_id=self.rebalance_config.group_id,
            generation_id=gen.generation_id,
            member_id=gen.member_id,
            group_instance_id=self.rebalance_config.group_instance_id,
            protocol_type=self.protocol_type(),
            protocol_name=gen.protocol_name,
            assignments=assignments,
        )
        return self._compose(
            self.client.send(
                coordinator,
                request,
                oldest_allowed_version=self.rebalance_config.oldest_allowed_version(ApiKey.SYNC_GROUP),
            ),
            partial(handle_sync_group_response, self),
            "SyncGroup",
        )

    # -- heartbeats ----------------------------------------------------------------------------

    def send_heartbeat_request(self) -> RequestFuture[None]:
        coordinator = self.coordinator
        if coordinator is None:
            return RequestFuture.failure(CoordinatorNotAvailableError())
        gen = self.generation
        request = HeartbeatRequest(
            group_id=self.rebalance_config.group_id,
            generation_id=gen.generation_id,
            member_id=gen.member_id,
            group_instance_id=self.rebalance_config.group_instance_id,
        )
        sent = self.client.send(
            coordinator, request, oldest_allowed_version=self.rebalance_config.oldest_allowed_version(ApiKey.HEARTBEAT)
        )
        return self._compose(sent, partial(handle_heartbeat_response, self, gen), "Heartbeat")

    def heartbeat_step(self, now_ms: int) -> int:
        """One decision of the heartbeat thread (called with no lock held; takes it briefly).
        Returns how long to wait before the next step, in ms. Deterministic: unit tests call it."""
        retry = self.rebalance_config.retry_backoff_ms
        poll_timed_out = False
        with self.lock:
            if self.closed or self.state.has_not_joined_group():
                return retry
            if self.coordinator_unknown():
                pending = self._find_coordinator_future
            else:
                pending = None
                if self.heartbeat.session_timeout_expired(now_ms):
                    self.mark_coordinator_unknown("session timed out without a heartbeat response", disconnect=True)
                    return retry
                if self.heartbeat.poll_timeout_expired(now_ms):
                    poll_timed_out = True
                elif not self.heartbeat.should_heartbeat(now_ms):
                    return min(retry, max(self.heartbeat.time_to_next_heartbeat(now_ms), 1))
                else:
                    self.heartbeat.sent_heartbeat(now_ms)
        if poll_timed_out:  # leaving polls the client: not under the coordinator lock
            log.warning(
                "consumer poll timeout has expired: the time between poll() calls exceeded "
                "max.poll.interval.ms (%d ms); leaving the group. Consider a larger "
                "max.poll.interval.ms or a smaller max.poll.records.",
                self.rebalance_config.rebalance_timeout_ms,
            )
            self.maybe_leave_group("consumer poll timeout has expired")
            return retry
        if pending is None and self.coordinator_unknown():
            self.lookup_coordinator()
            return retry
        if pending is not None:
            return retry
        future = self.send_heartbeat_request()

        def ok(_: None) -> None:
            with self.lock:
                self.heartbeat.received_heartbeat()

        def failed(exc: BaseException) -> None:
            with self.lock:
                if isinstance(exc, RebalanceInProgressError):
                    self.heartbeat.received_heartbeat()  # the coordinator is alive
                else:
                    self.heartbeat.fail_heartbeat()
                self.cond.notify_all()

        future.add_callbacks(ok, failed)
        return retry

    # -- leaving / closing -------------------------------------------------------------------

    def is_dynamic_member(self) -> bool:
        return self.rebalance_config.group_instance_id is None

    def _should_send_leave_group(self, operation: GroupMembershipOperation) -> bool:
        """Under ``lock``. Only a member of a generation with a known coordinator can leave; by
        default only dynamic members do (a static member keeps its partitions across a restart and is
        removed by the session timeout), as in Java."""
        if self.coordinator is None or self._state is MemberState.UNJOINED or not self.generation.has_member_id():
            return False
        if operation is GroupMembershipOperation.LEAVE_GROUP:
            return True
        if operation is GroupMembershipOperation.REMAIN_IN_GROUP:
            return False
        return self.is_dynamic_member()

    def maybe_leave_group(
        self, reason: str, operation: GroupMembershipOperation = GroupMembershipOperation.DEFAULT
    ) -> RequestFuture[None] | None:
        """Send LeaveGroup when :meth:`_should_send_leave_group` says so, then reset the generation so
        the next poll rejoins. The future (None when nothing was sent) fails if the request could not
        be sent or encoded; that failure is logged at WARNING here."""
        future: RequestFuture[None] | None = None
        with self.lock:
            coordinator = self.coordinator
            if coordinator is not None and self._should_send_leave_group(operation):
                member_id = self.generation.member_id
                log.info("member %s sending LeaveGroup to coordinator %s: %s", member_id, coordinator, reason)
                request = LeaveGroupRequestBuilder.for_member(
                    self.rebalance_config.group_id, member_id, self.rebalance_config.group_instance_id, reason
                )
                sent = self.client.send(coordinator, request)
                future = self._compose(sent, handle_leave_group_response, "LeaveGroup")
                future.add_callbacks(None, lambda exc: self._log_leave_group_failure(member_id, exc))
            self.reset_state_and_generation(f"leaving group: {reason}", True)
            self.rejoin_needed = True
        if future is not None:
            self.client.poll_no_wakeup()  # put it on the wire now: nobody may poll after unsubscribe()
        return future

    def _log_leave_group_failure(self, member_id: str, exc: BaseException) -> None:
        log.warning(
            "LeaveGroup of member %s in group %s failed: %s. The coordinator removes the member when "
            "session.timeout.ms (%d ms) expires; until then its partitions are not reassigned.",
            member_id, self.rebalance_config.group_id, exc, self.rebalance_config.session_timeout_ms,
        )  # fmt: skip

    def close(self, timer: Timer) -> None:
        """Stop the heartbeat thread and leave the group (waiting for the LeaveGroup until ``timer``)."""
        thread = None
        with self.lock:
            self.closed = True
            thread = self._heartbeat_thread
            self._heartbeat_thread = None
            self.cond.notify_all()
        if thread is not None:
            thread.shutdown()
        if self.rebalance_config.leave_group_on_close:
            self.on_leave_prepare()
            future = self.maybe_leave_group("the consumer is being closed")
            if future is not None:
                try:
                    done = self.client.poll_future(future, timer)
                except Exception as e:  # closing: best effort, but say so
                    log.warning("LeaveGroup on close could not be completed: %s", e)
                else:
                    if not done:
                        log.warning(
                            "LeaveGroup on close got no response before the close timeout; the coordinator "
                            "may keep the member until session.timeout.ms expires"
                        )

    def heartbeat_thread_alive(self) -> bool:
        t = self._heartbeat_thread
        return t is not None and t.is_alive()


__all__ = [
    "AbstractCoordinator",
    "GroupMembershipOperation",
    "GroupRebalanceConfig",
    "MemberState",
    "is_retriable",
]
