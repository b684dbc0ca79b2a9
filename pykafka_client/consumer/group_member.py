"""The typed seams of a group member (AbstractCoordinator) to the modules it is split into: what the
response handlers (group_response_handlers, offset_response_handlers) and the heartbeat thread may use of
it. AbstractCoordinator implements both; the helper modules import these Protocols, never the coordinator,
so no helper module depends on the class that calls it.
"""

from __future__ import annotations

import threading
from typing import Protocol

from pykafka_client.consumer.client_adapter import ConsumerClient
from pykafka_client.consumer.group_rebalance_config import GroupRebalanceConfig
from pykafka_client.consumer.heartbeat import Heartbeat
from pykafka_client.consumer.member_state import Generation, MemberState
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages.join_group_response import JoinGroupResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import Time


class GroupMember(Protocol):
    """What a group response handler reads and changes of the member. ``lock`` guards ``state``,
    ``generation`` and ``coordinator``; ``cond`` (on ``lock``) wakes the heartbeat thread."""

    rebalance_config: GroupRebalanceConfig
    lock: threading.RLock
    cond: threading.Condition
    heartbeat: Heartbeat
    generation: Generation
    coordinator: Node | None

    @property
    def state(self) -> MemberState: ...

    def protocol_type(self) -> str: ...

    def transition_to(self, target: MemberState) -> None:
        """The only way the member state changes (see member_state.VALID_TRANSITIONS)."""

    def mark_coordinator_unknown(self, cause: str, disconnect: bool = False) -> None: ...

    def request_rejoin(self, reason: str) -> None: ...

    def generation_snapshot(self) -> Generation: ...

    def reset_state_and_generation(self, reason: str, should_reset_member_id: bool) -> None: ...

    def reset_generation_on_response_error(self, api: str, error: type[KafkaError]) -> None: ...

    def on_join_leader(self, body: JoinGroupResponse) -> RequestFuture[bytes]:
        """Compute the assignment and send the leader's SyncGroup."""

    def on_join_follower(self) -> RequestFuture[bytes]:
        """Send the follower's (empty) SyncGroup."""


class HeartbeatDriven(Protocol):
    """What the heartbeat thread drives: one ``heartbeat_step`` at a time, polling ``client`` between them
    with no lock held, waiting on ``cond``. A step's exception is stored in ``heartbeat_failure``."""

    rebalance_config: GroupRebalanceConfig
    time: Time
    client: ConsumerClient
    lock: threading.RLock
    cond: threading.Condition
    closed: bool
    heartbeat_failure: BaseException | None

    @property
    def state(self) -> MemberState: ...

    def heartbeat_step(self, now_ms: int) -> int: ...
