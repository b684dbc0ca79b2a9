"""Partition assignors: range, roundrobin, sticky, cooperative-sticky (see abstract_assignor)."""

from __future__ import annotations

from collections.abc import Sequence

from pykafka_client.consumer.assignors.abstract_assignor import (
    AbstractPartitionAssignor,
    Assignment,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from pykafka_client.consumer.assignors.range import RangeAssignor
from pykafka_client.consumer.assignors.roundrobin import RoundRobinAssignor
from pykafka_client.consumer.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from pykafka_client.errors import ConfigurationError

BUILTIN_ASSIGNORS: dict[str, type[ConsumerPartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

# Java class names are accepted too, so configs copied from Java work.
_JAVA_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def get_assignor_instances(strategies: Sequence[object]) -> list[ConsumerPartitionAssignor]:
    """Instances for ``partition.assignment.strategy`` entries: names, Java class names, assignor
    classes or instances. Duplicate names raise ConfigurationError."""
    out: list[ConsumerPartitionAssignor] = []
    for s in strategies:
        if isinstance(s, ConsumerPartitionAssignor):
            inst = s
        elif isinstance(s, type) and issubclass(s, ConsumerPartitionAssignor):
            inst = s()
        elif isinstance(s, str):
            cls = BUILTIN_ASSIGNORS.get(_JAVA_NAMES.get(s.strip(), s.strip().lower()))
            if cls is None:
                raise ConfigurationError(f"invalid value {s!r} for configuration partition.assignment.strategy")
            inst = cls()
        else:
            raise ConfigurationError(f"invalid value {s!r} for configuration partition.assignment.strategy")
        if any(a.name() == inst.name() for a in out):
            raise ConfigurationError(f"partition.assignment.strategy lists assignor {inst.name()!r} twice")
        out.append(inst)
    return out


def rebalance_protocol(assignors: Sequence[ConsumerPartitionAssignor]) -> RebalanceProtocol:
    """The protocol all configured assignors support, COOPERATIVE preferred (Java: the highest common)."""
    common = set(RebalanceProtocol)
    for a in assignors:
        common &= set(a.supported_protocols())
    if not common:
        raise ConfigurationError("the configured assignors share no rebalance protocol")
    return max(common)


__all__ = [
    "BUILTIN_ASSIGNORS",
    "AbstractPartitionAssignor",
    "Assignment",
    "ConsumerPartitionAssignor",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "GroupSubscription",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "get_assignor_instances",
    "rebalance_protocol",
]
