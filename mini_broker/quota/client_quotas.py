"""The client quotas that are set, by entity (Kafka: the ``ClientQuotas`` records of the metadata log and
``ClientQuotaManager``'s lookup), sans-IO.

An entity is a set of (type, name) pairs with types ``user``, ``client-id`` (each optionally combined with
the other) or ``ip`` alone; a name of None is the type's default (``<default>``). Quota keys:
``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage`` (user / client-id entities) and
``connection_creation_rate`` (ip entities).

Which quota applies to a (user, client id) is Kafka's order of precedence, most specific first::

    user + client-id, user + default client-id, user,
    default user + client-id, default user + default client-id, default user,
    client-id, default client-id

Quotas live in memory: mini_broker does not persist them across restarts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
ENTITY_TYPES: Final = frozenset({USER, CLIENT_ID, IP})

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"
CLIENT_KEYS: Final = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE})
IP_KEYS: Final = frozenset({CONNECTION_CREATION_RATE})

#: (type, name or None for the default), sorted by type
Entity = tuple[tuple[str, "str | None"], ...]


class InvalidQuotaError(ValueError):
    """A bad entity, key or value: the AlterClientQuotas entry fails with INVALID_REQUEST."""


def make_entity(pairs: list[tuple[str, str | None]]) -> Entity:
    """Validate and normalise an entity (Kafka's rules: known types, no type twice, ip alone)."""
    types = [t for t, _ in pairs]
    if not pairs:
        raise InvalidQuotaError("Invalid empty client quota entity")
    for t in types:
        if t not in ENTITY_TYPES:
            raise InvalidQuotaError(f"Unhandled client quota entity type: {t}")
    if len(set(types)) != len(types):
        raise InvalidQuotaError(f"Duplicate entity type in client quota entity: {types}")
    if IP in types and len(types) > 1:
        raise InvalidQuotaError("Invalid quota entity combination: ip may not be combined with user or client-id")
    return tuple(sorted(pairs))


def check_key(entity: Entity, key: str, value: float | None) -> None:
    allowed = IP_KEYS if entity[0][0] == IP else CLIENT_KEYS
    if key not in allowed:
        raise InvalidQuotaError(f"Invalid configuration key {key} for entity {format_entity(entity)}")
    if value is not None and value <= 0:
        raise InvalidQuotaError(f"Illegal value {value} for quota {key}: it must be positive")


def format_entity(entity: Entity) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


def _precedence(user: str, client_id: str) -> list[Entity]:
    u, c, du, dc = (USER, user), (CLIENT_ID, client_id), (USER, None), (CLIENT_ID, None)
    return [
        tuple(sorted((u, c))), tuple(sorted((u, dc))), (u,),
        tuple(sorted((du, c))), tuple(sorted((du, dc))), (du,),
        (c,), (dc,),
    ]


@dataclass(frozen=True)
class ResolvedQuota:
    entity: Entity
    bound: float


class ClientQuotaStore:
    """The quotas that are set; thread-safe. ``version`` grows with every change (callers cache lookups by it)."""

    def __init__(self) -> None:
        self._quotas: dict[Entity, dict[str, float]] = {}
        self._lock = threading.Lock()
        self.version = 0
        #: which keys are set for some entity (lets the request path skip quota work entirely)
        self.keys_in_use: frozenset[str] = frozenset()

    def alter(self, entity: Entity, key: str, value: float | None) -> None:
        """Set ``key`` of ``entity`` to ``value`` (None removes it). Raises InvalidQuotaError."""
        check_key(entity, key, value)
        with self._lock:
            values = self._quotas.setdefault(entity, {})
            if value is None:
                values.pop(key, None)
                if not values:
                    del self._quotas[entity]
            else:
                values[key] = float(value)
            self.version += 1
            self.keys_in_use = frozenset(k for v in self._quotas.values() for k in v)

    def resolve(self, user: str, client_id: str, key: str) -> ResolvedQuota | None:
        """The quota that applies to (user, client id) for ``key``, by Kafka's precedence."""
        with self._lock:
            for entity in _precedence(user, client_id):
                values = self._quotas.get(entity)
                if values is not None and key in values:
                    return ResolvedQuota(entity, values[key])
        return None

    def ip_quota(self, ip: str | None) -> float | None:
        with self._lock:
            return self._quotas.get(((IP, ip),), {}).get(CONNECTION_CREATION_RATE)

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """Kafka's DescribeClientQuotas filter: each component is (entity type, match type, name) with match
        type 0 = exactly ``name``, 1 = the default, 2 = any; ``strict`` excludes entities with other types."""
        with self._lock:
            items = [(e, dict(v)) for e, v in self._quotas.items()]
        out = []
        for entity, values in items:
            names = dict(entity)
            ok = True
            for etype, match_type, match in components:
                if etype not in names:
                    ok = False
                elif match_type == 0 and names[etype] != match:
                    ok = False
                elif match_type == 1 and names[etype] is not None:
                    ok = False
            if ok and strict and set(names) != {c[0] for c in components}:
                ok = False
            if ok:
                out.append((entity, values))
        return out
