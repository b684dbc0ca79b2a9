"""KIP-848 consumer groups (``group.protocol=consumer``): the broker computes the assignment and members
converge towards it by heartbeats, with member epochs and revoke-before-assign.

Sans-IO core: :mod:`model` (group and member state), :mod:`assignors` (``uniform``, ``range``),
:mod:`reconciliation` (one member towards its target), :mod:`manager` (ConsumerGroupHeartbeat, timers, offset
checks). Driver: :mod:`coordinator` (lock, periodic expiry, hosted on the group coordinator's runtime).
"""

from __future__ import annotations

from mini_broker.group.consumer.config import ConsumerGroupConfig
from mini_broker.group.consumer.coordinator import ConsumerGroupCoordinator
from mini_broker.group.consumer.manager import (
    ConsumerGroupHeartbeatParams,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupManager,
)
from mini_broker.group.consumer.model import ConsumerGroup, ConsumerGroupMember, TopicInfo, TopicsImage

__all__ = ["ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroupCoordinator", "ConsumerGroupHeartbeatParams",
           "ConsumerGroupHeartbeatResult", "ConsumerGroupManager", "ConsumerGroupMember", "TopicInfo", "TopicsImage"]
