"""Kafka's ACL model (Java ``org.apache.kafka.common.acl`` and ``common.resource``): the enums with their wire
codes, bindings and the filters that select bindings. The admin client sends these; mini_broker's authorizer
stores and matches them with the same types (so they live at the protocol layer, which both may import, as Kafka's
live in its ``common`` module).

A binding is a :class:`ResourcePattern` (what) plus an :class:`AccessControlEntry` (who, from where, which
operation, allow or deny). A filter has the same shape with ``None`` / ``ANY`` meaning "any"; the pattern type
``MATCH`` selects every pattern that would apply to the named resource (literal of that name, the wildcard
literal ``*``, and prefixes of the name), as Kafka's ``PatternType.MATCH``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

#: the one cluster resource's name (Kafka: ``Resource.CLUSTER_NAME``)
CLUSTER_NAME = "kafka-cluster"
#: the literal resource name that matches every resource of its type (Kafka: ``ResourcePattern.WILDCARD_RESOURCE``)
WILDCARD_RESOURCE = "*"
#: the principal that matches every user (Kafka: ``AclEntry.WildcardPrincipalString``)
WILDCARD_PRINCIPAL = "User:*"
#: the host that matches every client address (Kafka: ``AclEntry.WildcardHost``)
WILDCARD_HOST = "*"


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


def _enum_value(cls: type[enum.IntEnum], code: int) -> enum.IntEnum:
    """``cls(code)``, or its UNKNOWN member for a code this version does not know (as Kafka's ``fromCode``)."""
    try:
        return cls(code)
    except ValueError:
        return cls(0)


def operation(code: int) -> AclOperation:
    value = _enum_value(AclOperation, code)
    assert isinstance(value, AclOperation)
    return value


def permission_type(code: int) -> AclPermissionType:
    value = _enum_value(AclPermissionType, code)
    assert isinstance(value, AclPermissionType)
    return value


def resource_type(code: int) -> ResourceType:
    value = _enum_value(ResourceType, code)
    assert isinstance(value, ResourceType)
    return value


def pattern_type(code: int) -> PatternType:
    value = _enum_value(PatternType, code)
    assert isinstance(value, PatternType)
    return value


def parse_enum(cls: type[enum.IntEnum], text: str, what: str) -> int:
    """The member of ``cls`` named ``text`` (any case, ``-`` for ``_``: ``transactional-id``); a ValueError names
    the accepted names otherwise."""
    key = text.strip().upper().replace("-", "_")
    try:
        return int(cls[key])
    except KeyError:
        names = ", ".join(m.name.lower() for m in cls if m.name != "UNKNOWN")
        raise ValueError(f"unknown {what} {text!r}: expected one of {names}") from None


@dataclass(frozen=True)
class ResourcePattern:
    """What a binding applies to: a resource type, a name and how the name matches (LITERAL or PREFIXED)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def to_filter(self) -> ResourcePatternFilter:
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)


@dataclass(frozen=True)
class AccessControlEntry:
    """Who (``User:<name>`` or ``User:*``), from which host (``*``: any), which operation, allow or deny."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_filter(self) -> AccessControlEntryFilter:
        return AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type)


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Java ``AclBinding``)."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def to_filter(self) -> AclBindingFilter:
        return AclBindingFilter(self.pattern.to_filter(), self.entry.to_filter())

    def __str__(self) -> str:
        p, e = self.pattern, self.entry
        return (f"({p.resource_type.name} {p.pattern_type.name} {p.name!r}: {e.permission_type.name} "
                f"{e.principal} {e.operation.name} from {e.host})")


@dataclass(frozen=True)
class ResourcePatternFilter:
    """Selects resource patterns: ANY type / None name / ANY pattern type match everything; MATCH selects the
    patterns that would apply to resource ``name``."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, PatternType.LITERAL, PatternType.PREFIXED):
            return self.name == pattern.name
        # MATCH: the patterns that apply to the resource called ``name``
        if pattern.pattern_type == PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        if pattern.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False

    def unknown_element(self) -> str | None:
        """What makes this filter unusable (an UNKNOWN code), or None."""
        if self.resource_type == ResourceType.UNKNOWN:
            return "resource type UNKNOWN"
        if self.pattern_type == PatternType.UNKNOWN:
            return "pattern type UNKNOWN"
        return None


@dataclass(frozen=True)
class AccessControlEntryFilter:
    """Selects entries: None principal / None host / ANY operation / ANY permission match everything."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type))

    def unknown_element(self) -> str | None:
        if self.operation == AclOperation.UNKNOWN:
            return "operation UNKNOWN"
        if self.permission_type == AclPermissionType.UNKNOWN:
            return "permission type UNKNOWN"
        return None


@dataclass(frozen=True)
class AclBindingFilter:
    """Selects bindings (Java ``AclBindingFilter``); :data:`ANY_ACL` selects all of them."""

    pattern: ResourcePatternFilter = ResourcePatternFilter()
    entry: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)

    def unknown_element(self) -> str | None:
        return self.pattern.unknown_element() or self.entry.unknown_element()


ANY_ACL = AclBindingFilter()
