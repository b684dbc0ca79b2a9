"""The ACL authorizer (Kafka: ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``).

Switched on by ``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``; without it
the broker has no authorizer and every request is allowed. The rules, as Kafka documents them:

* a principal listed in ``super.users`` (``User:a;User:b``) may do everything;
* the ACLs that apply to a resource are those of its type whose pattern matches its name: a LITERAL pattern of
  the same name or of the wildcard name ``*``, and every PREFIXED pattern the name starts with;
* a resource without any applying ACL (for any principal) is allowed when ``allow.everyone.if.no.acl.found``
  is true, and denied otherwise;
* among the applying ACLs, those of the principal (or ``User:*``) and the client's host (or ``*``) count; a
  DENY for the operation (or ALL) wins over every ALLOW;
* an ALLOW for the operation, or for ALL, allows it; so does an ALLOW for an operation that implies it: READ,
  WRITE, DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.

ACLs are kept in memory (replaced copy-on-write, so checks take no lock). A single broker writes them to
``acls.json`` in the data directory with :func:`~mini_broker.utils.atomic_file.atomic_write` after every change and
reloads them when restarted on the same directory. A cluster broker (:meth:`StandardAuthorizer.replicate_with`)
sends every change to the controller instead, which keeps the ACLs in its metadata image (persisted with it); each
broker applies the image's ACLs (:meth:`StandardAuthorizer.apply_replicated`), as KRaft brokers apply the ACL
records of the metadata log.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mini_broker.config import KafkaConfig
from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.errors import ConfigurationError, InvalidRequestError
from pykafka_client.protocol.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

log = logging.getLogger(__name__)

#: the value of ``authorizer.class.name`` that switches the authorizer on (KRaft's authorizer)
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
#: the ZooKeeper-era class name: accepted as a synonym (same ACL semantics)
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ACL_FILE = "acls.json"
_FILE_VERSION = 1

#: operations an ALLOW of another operation grants too (Kafka's implied operations)
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}

#: the operations each resource type has (for the authorized-operations bit sets of Metadata / DescribeGroups)
OPERATIONS_BY_TYPE: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE,
                         AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE,
                           AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.WRITE, AclOperation.DESCRIBE),
}

_CONCRETE_TYPES = frozenset({ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                             ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN, ResourceType.USER})


def principal_of(user: str) -> str:
    """The principal the authorizer sees for a connection's user name (Kafka's ``KafkaPrincipal`` of type User)."""
    return f"User:{user}"


def parse_super_users(raw: str | None) -> frozenset[str]:
    """``super.users``: principals separated by ``;`` (each ``Type:name``)."""
    users = set()
    for part in (raw or "").split(";"):
        p = part.strip()
        if not p:
            continue
        kind, sep, name = p.partition(":")
        if not sep or not kind or not name:
            raise ConfigurationError(f"Invalid value {raw!r} for configuration super.users: {p!r} is not a "
                                     "principal of the form User:<name>; separate principals with ';'")
        users.add(p)
    return frozenset(users)


def validate_new_binding(binding: AclBinding) -> None:
    """Kafka's checks of a CreateAcls entry; InvalidRequestError names what is wrong."""
    p, e = binding.pattern, binding.entry
    if p.resource_type not in _CONCRETE_TYPES:
        raise InvalidRequestError(f"Invalid resource type {p.resource_type.name}: name a concrete type "
                                  "(topic, group, cluster, transactional_id)")
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidRequestError(f"Invalid pattern type {p.pattern_type.name}: an ACL is LITERAL or PREFIXED")
    if not p.name:
        raise InvalidRequestError("Resource name should not be empty")
    if p.resource_type == ResourceType.CLUSTER and (p.name != CLUSTER_NAME or p.pattern_type != PatternType.LITERAL):
        raise InvalidRequestError(f"The only valid name for the CLUSTER resource is the literal {CLUSTER_NAME}")
    if e.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise InvalidRequestError(f"Invalid operation {e.operation.name} for an ACL")
    if e.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidRequestError(f"Invalid permission type {e.permission_type.name}: an ACL ALLOWs or DENYs")
    kind, sep, name = e.principal.partition(":")
    if not sep or not kind or not name:
        raise InvalidRequestError(f"Could not parse principal {e.principal!r}: expected <type>:<name>, e.g. User:alice")
    if not e.host:
        raise InvalidRequestError("Invalid host: use * for any host")


@dataclass(frozen=True)
class _Index:
    """The ACLs of one resource type: literal patterns by name, prefixed patterns as a list."""

    literal: dict[str, tuple[AclBinding, ...]] = field(default_factory=dict)
    prefixed: tuple[AclBinding, ...] = ()

    def applying(self, name: str) -> list[AclBinding]:
        out = list(self.literal.get(name, ()))
        if name != WILDCARD_RESOURCE:
            out.extend(self.literal.get(WILDCARD_RESOURCE, ()))
        out.extend(b for b in self.prefixed if name.startswith(b.pattern.name))
        return out

    def all(self) -> Iterable[AclBinding]:
        for bindings in self.literal.values():
            yield from bindings
        yield from self.prefixed


def _build_index(bindings: Iterable[AclBinding]) -> dict[ResourceType, _Index]:
    literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
    prefixed: dict[ResourceType, list[AclBinding]] = {}
    for b in bindings:
        rt = b.pattern.resource_type
        if b.pattern.pattern_type == PatternType.PREFIXED:
            prefixed.setdefault(rt, []).append(b)
        else:
            literal.setdefault(rt, {}).setdefault(b.pattern.name, []).append(b)
    return {rt: _Index({n: tuple(bs) for n, bs in literal.get(rt, {}).items()}, tuple(prefixed.get(rt, ())))
            for rt in set(literal) | set(prefixed)}


def _entry_applies(entry: AccessControlEntry, principal: str, host: str) -> bool:
    return entry.principal in (principal, WILDCARD_PRINCIPAL) and entry.host in (host, WILDCARD_HOST)


def _allows(acl_op: AclOperation, op: AclOperation) -> bool:
    return acl_op == AclOperation.ALL or acl_op == op or acl_op in IMPLIED_BY.get(op, ())


def _denies(acl_op: AclOperation, op: AclOperation) -> bool:
    return acl_op == AclOperation.ALL or acl_op == op


class StandardAuthorizer:
    """Kafka's ACL authorizer (see the module docstring). ``data_dir`` None: ACLs are not persisted."""

    def __init__(self, data_dir: str | None, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._path = os.path.join(data_dir, ACL_FILE) if data_dir is not None else None
        self._lock = threading.Lock()
        #: a cluster broker's way to the controller (see :meth:`replicate_with`); None: the ACL file
        self._replicate: Callable[[list[dict[str, str]], list[dict[str, str]]], None] | None = None
        self._bindings: tuple[AclBinding, ...] = ()
        self._index: dict[ResourceType, _Index] = {}
        #: False on a cluster broker until the controller's image gave it the ACLs: only super users are allowed
        #: meanwhile (Kafka's StandardAuthorizer is not ready before its first metadata load), so a restart window
        #: neither lets a DENY lapse (allow.everyone.if.no.acl.found) nor decides on an empty list
        self._ready = True
        if self._path is not None and os.path.exists(self._path):
            self._replace(self._load(self._path))
            log.info("event=acls_loaded count=%d path=%s", len(self._bindings), self._path)

    # --- checks (any thread, no lock) ------------------------------------------------------------

    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """May ``principal`` connected from ``host`` do ``op`` on resource ``rtype``/``name``?"""
        if principal in self.super_users:
            return True
        if not self._ready:
            return False
        index = self._index.get(rtype)
        acls = index.applying(name) if index is not None else []
        if not acls:
            return self.allow_everyone_if_no_acl_found
        allowed = False
        for b in acls:
            e = b.entry
            if not _entry_applies(e, principal, host):
                continue
            if e.permission_type == AclPermissionType.DENY:
                if _denies(e.operation, op):
                    return False
            elif not allowed and _allows(e.operation, op):
                allowed = True
        return allowed

    def authorize_by_resource_type(self, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
        """May ``principal`` do ``op`` on at least one resource of ``rtype`` (Kafka's
        ``authorizeByResourceType``: an ALLOW pattern of the type that no DENY of the principal covers)? Used by
        InitProducerId without a transactional id: WRITE on any topic is enough for an idempotent producer."""
        if principal in self.super_users:
            return True
        if not self._ready:
            return False
        index = self._index.get(rtype)
        if index is None:
            return self.allow_everyone_if_no_acl_found
        mine = [b for b in index.all() if _entry_applies(b.entry, principal, host)]
        denies = [b.pattern for b in mine
                  if b.entry.permission_type == AclPermissionType.DENY and _denies(b.entry.operation, op)]
        if any(p.pattern_type == PatternType.LITERAL and p.name == WILDCARD_RESOURCE for p in denies):
            return False
        for b in mine:
            if b.entry.permission_type != AclPermissionType.ALLOW or not _allows(b.entry.operation, op):
                continue
            p = b.pattern
            covered = any(
                (d.pattern_type == PatternType.PREFIXED and p.name.startswith(d.name))
                or (d.pattern_type == PatternType.LITERAL and p.pattern_type == PatternType.LITERAL and d.name == p.name)
                for d in denies)
            if not covered:
                return True
        return False

    def authorized_operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """The bit set (bit = operation code) of the operations allowed on the resource (KIP-430)."""
        bits = 0
        for op in OPERATIONS_BY_TYPE.get(rtype, ()):
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << int(op)
        return bits

    # --- ACL management --------------------------------------------------------------------------

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings ``binding_filter`` selects, in creation order."""
        return [b for b in self._bindings if binding_filter.matches(b)]

    def create_acls(self, bindings: list[AclBinding]) -> list[BaseException | None]:
        """Add ``bindings`` (each validated alone; an existing one is kept once). One result per binding: None,
        or the InvalidRequestError that refused it. Raises OSError when the ACL file cannot be written (a cluster
        broker: the controller's error)."""
        results: list[BaseException | None] = []
        with self._lock:
            current = list(self._bindings)
            known = set(current)
            for b in bindings:
                try:
                    validate_new_binding(b)
                except InvalidRequestError as e:
                    results.append(e)
                    continue
                if b not in known:
                    known.add(b)
                    current.append(b)
                results.append(None)
            added = current[len(self._bindings):]
            if added and self._replicate is None:
                self._store(current)
        if added and self._replicate is not None:
            self._replicate([binding_to_json(b) for b in added], [])
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every binding each filter selects; per filter, the bindings it removed."""
        with self._lock:
            removed: list[list[AclBinding]] = [[b for b in self._bindings if f.matches(b)] for f in filters]
            gone = [b for b in self._bindings if any(b in bs for bs in removed)]
            if gone and self._replicate is None:
                self._store([b for b in self._bindings if b not in gone])
        if gone and self._replicate is not None:
            # outside the lock: the controller's answer is applied (apply_replicated) by this thread or the
            # heartbeat thread, whichever gets the image first
            self._replicate([], [binding_to_json(b) for b in gone])
        return removed

    # --- replication (a cluster broker) ----------------------------------------------------------

    def replicate_with(self, replicate: Callable[[list[dict[str, str]], list[dict[str, str]]], None]) -> None:
        """Send changes through ``replicate(created, deleted)`` (the controller; it raises when the change could not
        be made) instead of writing the local file; the ACLs are then those of the controller's image."""
        with self._lock:
            self._replicate = replicate
            self._path = None
            self._replace([])
            self._ready = False

    def apply_replicated(self, entries: list[dict[str, str]]) -> None:
        """The ACLs of the controller's metadata image (all of them) replace this broker's."""
        bindings = [binding_from_json(e) for e in entries]
        with self._lock:
            if bindings != list(self._bindings):
                self._replace(bindings)
                log.info("event=acls_applied count=%d", len(bindings))
            self._ready = True

    # --- storage ---------------------------------------------------------------------------------

    def _store(self, bindings: list[AclBinding]) -> None:
        """A single broker's change: the ACL file first (an OSError leaves the old ACLs in force), then memory."""
        self._persist(bindings)
        self._replace(bindings)

    def _replace(self, bindings: list[AclBinding]) -> None:
        self._bindings = tuple(bindings)
        self._index = _build_index(bindings)

    def _persist(self, bindings: list[AclBinding]) -> None:
        if self._path is None:
            return
        doc = {"version": _FILE_VERSION, "acls": [binding_to_json(b) for b in bindings]}
        atomic_write(self._path, json.dumps(doc, indent=1).encode())

    @staticmethod
    def _load(path: str) -> list[AclBinding]:
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            return [binding_from_json(a) for a in doc["acls"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ConfigurationError(f"cannot read the ACL file {path}: {e}; restore it from a backup or remove it "
                                     "(the broker then starts without ACLs)") from e


def binding_to_json(b: AclBinding) -> dict[str, str]:
    """A binding as the ACL file and the controller's image keep it (enum names, not codes)."""
    return {"resource_type": b.pattern.resource_type.name, "name": b.pattern.name,
            "pattern_type": b.pattern.pattern_type.name, "principal": b.entry.principal, "host": b.entry.host,
            "operation": b.entry.operation.name, "permission_type": b.entry.permission_type.name}


def binding_from_json(a: dict[str, str]) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType[a["resource_type"]], a["name"], PatternType[a["pattern_type"]]),
                      AccessControlEntry(a["principal"], a["host"], AclOperation[a["operation"]],
                                         AclPermissionType[a["permission_type"]]))


def create_authorizer(config: KafkaConfig, data_dir: str | None) -> StandardAuthorizer | None:
    """The authorizer ``authorizer.class.name`` asks for (None: none configured)."""
    get = config.get
    class_name = get("authorizer.class.name") or ""
    if not class_name:
        return None
    if class_name not in (STANDARD_AUTHORIZER, ACL_AUTHORIZER):
        raise ConfigurationError(f"Invalid value {class_name!r} for configuration authorizer.class.name: mini_broker "
                                 f"provides {STANDARD_AUTHORIZER} (or leave it empty for no authorization)")
    super_users = get("super.users")
    allow_everyone = get("allow.everyone.if.no.acl.found")
    return StandardAuthorizer(data_dir, parse_super_users(super_users if isinstance(super_users, str) else None),
                              bool(allow_everyone))
