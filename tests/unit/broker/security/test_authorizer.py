"""The ACL authorizer against Kafka's documented rules (docs: "Authorization and ACLs", the StandardAuthorizer
javadoc, KIP-290 prefixed ACLs, KIP-679 idempotent WRITE):

* a DENY wins over any ALLOW; an ALLOW for an operation (or ALL) allows it;
* READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; DENY implies nothing;
* LITERAL patterns match their name and the wildcard ``*`` matches every name; PREFIXED patterns match names
  starting with the prefix;
* ``User:*`` matches every principal, host ``*`` every host;
* ``super.users`` may do everything; with no ACL on a resource, ``allow.everyone.if.no.acl.found`` decides.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mini_broker.config import KafkaConfig
from mini_broker.security.auth_helper import client_ip
from mini_broker.security.authorizer import (
    ACL_FILE,
    STANDARD_AUTHORIZER,
    StandardAuthorizer,
    create_authorizer,
    parse_super_users,
)
from pykafka_client.errors import ConfigurationError, InvalidRequestError
from pykafka_client.protocol.acl import (
    ANY_ACL,
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

Op, Perm, RT, PT = AclOperation, AclPermissionType, ResourceType, PatternType
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(rtype: ResourceType, name: str, op: AclOperation, perm: AclPermissionType = Perm.ALLOW,
        principal: str = ALICE, host: str = "*", pattern: PatternType = PT.LITERAL) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def authorizer(*bindings: AclBinding, super_users: tuple[str, ...] = (), allow_everyone: bool = False
               ) -> StandardAuthorizer:
    a = StandardAuthorizer(None, super_users, allow_everyone)
    assert a.create_acls(list(bindings)) == [None] * len(bindings)
    return a


# --- principal x operation x resource pattern -------------------------------------------------------------

PATTERNS = [
    # (pattern type, pattern name, resource name, applies?)
    (PT.LITERAL, "orders", "orders", True),
    (PT.LITERAL, "orders", "orders-eu", False),
    (PT.LITERAL, "*", "anything", True),
    (PT.PREFIXED, "ord", "orders", True),
    (PT.PREFIXED, "ord", "bord", False),
    (PT.PREFIXED, "orders-", "orders", False),
]


@pytest.mark.parametrize("rtype", [RT.TOPIC, RT.GROUP, RT.TRANSACTIONAL_ID])
@pytest.mark.parametrize("pattern,pattern_name,resource,applies", PATTERNS)
@pytest.mark.parametrize("principal,acl_principal,matches", [
    (ALICE, ALICE, True), (BOB, ALICE, False), (BOB, "User:*", True)])
def test_matrix_principal_pattern_resource(rtype: ResourceType, pattern: PatternType, pattern_name: str, resource: str,
                                           applies: bool, principal: str, acl_principal: str, matches: bool) -> None:
    a = authorizer(acl(rtype, pattern_name, Op.READ, principal=acl_principal, pattern=pattern))
    assert a.authorize(principal, HOST, Op.READ, rtype, resource) is (applies and matches)
    # another resource type never applies
    other = RT.GROUP if rtype != RT.GROUP else RT.TOPIC
    assert a.authorize(principal, HOST, Op.READ, other, resource) is False


@pytest.mark.parametrize("granted", [op for op in Op if op not in (Op.UNKNOWN, Op.ANY)])
@pytest.mark.parametrize("asked", [op for op in Op if op not in (Op.UNKNOWN, Op.ANY, Op.ALL)])
def test_matrix_operations_with_implications(granted: AclOperation, asked: AclOperation) -> None:
    a = authorizer(acl(RT.TOPIC, "t", granted))
    implied = (asked == Op.DESCRIBE and granted in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER)) or (
        asked == Op.DESCRIBE_CONFIGS and granted == Op.ALTER_CONFIGS)
    assert a.authorize(ALICE, HOST, asked, RT.TOPIC, "t") is (granted in (asked, Op.ALL) or implied)


def test_deny_wins_over_allow_and_implies_nothing() -> None:
    a = authorizer(acl(RT.TOPIC, "*", Op.ALL), acl(RT.TOPIC, "secret", Op.READ, Perm.DENY))
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "secret")
    # a DENY of READ does not deny DESCRIBE (implication is for ALLOW only)
    assert a.authorize(ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "secret")
    assert a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "secret")
    assert a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "public")


def test_deny_all_on_prefix_beats_literal_allow() -> None:
    a = authorizer(acl(RT.TOPIC, "fin-ledger", Op.READ),
                   acl(RT.TOPIC, "fin-", Op.ALL, Perm.DENY, pattern=PT.PREFIXED))
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "fin-ledger")


def test_deny_for_wildcard_principal_applies_to_everyone() -> None:
    a = authorizer(acl(RT.GROUP, "g", Op.READ), acl(RT.GROUP, "g", Op.READ, Perm.DENY, principal="User:*"))
    assert not a.authorize(ALICE, HOST, Op.READ, RT.GROUP, "g")


@pytest.mark.parametrize("acl_host,client_host,allowed", [
    ("*", HOST, True), (HOST, HOST, True), ("10.0.0.2", HOST, False)])
def test_host_matching(acl_host: str, client_host: str, allowed: bool) -> None:
    a = authorizer(acl(RT.TOPIC, "t", Op.WRITE, host=acl_host))
    assert a.authorize(ALICE, client_host, Op.WRITE, RT.TOPIC, "t") is allowed


@pytest.mark.parametrize("address,ip", [("127.0.0.1:5432", "127.0.0.1"), ("::1:5432", "::1"), ("[::1]:5432", "::1"),
                                        ("10.0.0.1", "10.0.0.1")])
def test_the_host_is_the_clients_ip_without_its_port(address: str, ip: str) -> None:
    assert client_ip(address) == ip


def test_deny_from_one_host_only() -> None:
    a = authorizer(acl(RT.TOPIC, "t", Op.WRITE), acl(RT.TOPIC, "t", Op.WRITE, Perm.DENY, host="10.6.6.6"))
    assert a.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "t")
    assert not a.authorize(ALICE, "10.6.6.6", Op.WRITE, RT.TOPIC, "t")


def test_super_users_may_do_everything_even_when_denied() -> None:
    a = authorizer(acl(RT.CLUSTER, CLUSTER_NAME, Op.ALL, Perm.DENY, principal="User:*"),
                   super_users=("User:admin",))
    for op in (Op.ALTER, Op.CLUSTER_ACTION, Op.CREATE):
        assert a.authorize("User:admin", HOST, op, RT.CLUSTER, CLUSTER_NAME)
        assert not a.authorize(ALICE, HOST, op, RT.CLUSTER, CLUSTER_NAME)


@pytest.mark.parametrize("allow_everyone", [False, True])
def test_allow_everyone_if_no_acl_found(allow_everyone: bool) -> None:
    # an ACL on another resource (even of another principal) does not count for this one
    a = authorizer(acl(RT.TOPIC, "other", Op.READ, principal=BOB), allow_everyone=allow_everyone)
    assert a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "free") is allow_everyone
    # a resource with an ACL of any principal is no longer "without ACLs": alice is denied
    a.create_acls([acl(RT.TOPIC, "free", Op.READ, principal=BOB)])
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "free")


def test_authorize_by_resource_type_kip_679() -> None:
    """InitProducerId without a transactional id: WRITE on any topic is enough, unless a DENY covers it."""
    assert not authorizer().authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)
    assert authorizer(acl(RT.TOPIC, "t", Op.WRITE)).authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)
    assert authorizer(acl(RT.TOPIC, "p-", Op.ALL, pattern=PT.PREFIXED)).authorize_by_resource_type(
        ALICE, HOST, Op.WRITE, RT.TOPIC)
    covered = authorizer(acl(RT.TOPIC, "p-t", Op.WRITE), acl(RT.TOPIC, "p-", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED))
    assert not covered.authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)
    wildcard_deny = authorizer(acl(RT.TOPIC, "t", Op.WRITE), acl(RT.TOPIC, "*", Op.WRITE, Perm.DENY))
    assert not wildcard_deny.authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)
    assert not authorizer(acl(RT.TOPIC, "t", Op.READ)).authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)
    assert authorizer(super_users=(ALICE,)).authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC)


def test_authorized_operations_bit_set() -> None:
    a = authorizer(acl(RT.TOPIC, "t", Op.READ), acl(RT.TOPIC, "t", Op.ALTER_CONFIGS))
    bits = a.authorized_operations(ALICE, HOST, RT.TOPIC, "t")
    assert bits == sum(1 << op for op in (Op.READ, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))


# --- create / describe / delete with filters --------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    acl(RT.ANY, "t", Op.READ), acl(RT.UNKNOWN, "t", Op.READ), acl(RT.TOPIC, "t", Op.READ, pattern=PT.MATCH),
    acl(RT.TOPIC, "t", Op.READ, pattern=PT.ANY), acl(RT.TOPIC, "", Op.READ), acl(RT.TOPIC, "t", Op.ANY),
    acl(RT.TOPIC, "t", Op.READ, Perm.ANY), acl(RT.TOPIC, "t", Op.READ, principal="alice"),
    acl(RT.CLUSTER, "other", Op.ALTER), acl(RT.CLUSTER, "kafka-", Op.ALTER, pattern=PT.PREFIXED),
])
def test_create_refuses_what_kafka_refuses(bad: AclBinding) -> None:
    a = StandardAuthorizer(None)
    good = acl(RT.TOPIC, "t", Op.READ)
    errors = a.create_acls([bad, good])
    assert isinstance(errors[0], InvalidRequestError) and errors[1] is None
    assert a.acls(ANY_ACL) == [good]


def test_create_is_idempotent() -> None:
    a = StandardAuthorizer(None)
    b = acl(RT.TOPIC, "t", Op.READ)
    assert a.create_acls([b, b]) == [None, None]
    assert a.create_acls([b]) == [None]
    assert a.acls(ANY_ACL) == [b]


LIT = acl(RT.TOPIC, "orders", Op.READ)
WILD = acl(RT.TOPIC, "*", Op.DESCRIBE, principal="User:*")
PREF = acl(RT.TOPIC, "ord", Op.WRITE, pattern=PT.PREFIXED)
OTHER_PREF = acl(RT.TOPIC, "x", Op.WRITE, pattern=PT.PREFIXED)
GROUP = acl(RT.GROUP, "orders", Op.READ, Perm.DENY, principal=BOB, host=HOST)


@pytest.mark.parametrize("binding_filter,expected", [
    (ANY_ACL, [LIT, WILD, PREF, OTHER_PREF, GROUP]),
    (AclBindingFilter(ResourcePatternFilter(RT.TOPIC)), [LIT, WILD, PREF, OTHER_PREF]),
    # ANY pattern type with a name: exact name, any pattern type
    (AclBindingFilter(ResourcePatternFilter(RT.ANY, "orders", PT.ANY)), [LIT, GROUP]),
    # MATCH: every pattern that applies to the resource "orders"
    (AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH)), [LIT, WILD, PREF]),
    (AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "ord", PT.PREFIXED)), [PREF]),
    (AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "ord", PT.LITERAL)), []),
    (AclBindingFilter(entry=AccessControlEntryFilter(principal=BOB)), [GROUP]),
    (AclBindingFilter(entry=AccessControlEntryFilter(host=HOST)), [GROUP]),
    (AclBindingFilter(entry=AccessControlEntryFilter(operation=Op.WRITE)), [PREF, OTHER_PREF]),
    (AclBindingFilter(entry=AccessControlEntryFilter(permission_type=Perm.DENY)), [GROUP]),
])
def test_filters(binding_filter: AclBindingFilter, expected: list[AclBinding]) -> None:
    a = authorizer(LIT, WILD, PREF, OTHER_PREF, GROUP)
    assert a.acls(binding_filter) == expected


def test_delete_returns_what_each_filter_removed() -> None:
    a = authorizer(LIT, WILD, PREF, OTHER_PREF, GROUP)
    removed = a.delete_acls([AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH)),
                             AclBindingFilter(ResourcePatternFilter(RT.GROUP))])
    assert removed == [[LIT, WILD, PREF], [GROUP]]
    assert a.acls(ANY_ACL) == [OTHER_PREF]
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "orders")


def test_unknown_filter_elements_are_reported() -> None:
    assert AclBindingFilter(ResourcePatternFilter(RT.UNKNOWN)).unknown_element() == "resource type UNKNOWN"
    assert AclBindingFilter(entry=AccessControlEntryFilter(operation=Op.UNKNOWN)).unknown_element() == "operation UNKNOWN"
    assert ANY_ACL.unknown_element() is None


# --- persistence and configuration ------------------------------------------------------------------------

def test_acls_survive_a_restart_on_the_same_data_dir(tmp_path: Path) -> None:
    a = StandardAuthorizer(str(tmp_path))
    a.create_acls([LIT, PREF, GROUP])
    a.delete_acls([AclBindingFilter(ResourcePatternFilter(RT.GROUP))])
    reloaded = StandardAuthorizer(str(tmp_path))
    assert reloaded.acls(ANY_ACL) == [LIT, PREF]
    assert reloaded.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "orders-eu")
    assert json.loads((tmp_path / ACL_FILE).read_text())["version"] == 1
    assert not os.path.exists(tmp_path / (ACL_FILE + ".tmp"))


def test_a_corrupt_acl_file_stops_the_start_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ACL_FILE).write_text("{not json")
    with pytest.raises(ConfigurationError, match="cannot read the ACL file"):
        StandardAuthorizer(str(tmp_path))


def test_config_switches_the_authorizer_on() -> None:
    assert create_authorizer(KafkaConfig({}), None) is None
    a = create_authorizer(KafkaConfig({"authorizer.class.name": STANDARD_AUTHORIZER,
                                       "super.users": "User:admin; User:broker",
                                       "allow.everyone.if.no.acl.found": "true"}), None)
    assert a is not None and a.super_users == {"User:admin", "User:broker"} and a.allow_everyone_if_no_acl_found
    with pytest.raises(ConfigurationError, match=r"authorizer\.class\.name"):
        create_authorizer(KafkaConfig({"authorizer.class.name": "com.example.Mine"}), None)


def test_super_users_parsing() -> None:
    assert parse_super_users(None) == frozenset()
    assert parse_super_users("User:a;;User:CN=host,O=org") == {"User:a", "User:CN=host,O=org"}
    with pytest.raises(ConfigurationError, match=r"super\.users"):
        parse_super_users("alice")


def test_acls_of_one_resource_type_never_apply_to_another() -> None:
    a = authorizer(*(acl(RT.TOPIC, f"t{i}", Op.READ) for i in range(50)))
    assert not a.authorize(ALICE, HOST, Op.READ, RT.GROUP, "t1")
    assert not a.authorize(ALICE, HOST, Op.READ, RT.TRANSACTIONAL_ID, "t1")
    assert all(a.authorize(ALICE, HOST, Op.DESCRIBE, RT.TOPIC, f"t{i}") for i in range(50))


def test_a_cluster_broker_allows_only_super_users_until_the_controller_gave_it_the_acls() -> None:
    """Kafka's StandardAuthorizer is not ready before its first metadata load: a restarting cluster broker
    neither lets a DENY lapse under allow.everyone.if.no.acl.found nor decides on an empty ACL list."""
    a = StandardAuthorizer(None, ["User:admin"], allow_everyone_if_no_acl_found=True)
    a.replicate_with(lambda created, deleted: None)
    assert not a.authorize("User:alice", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "t")
    assert not a.authorize_by_resource_type("User:alice", "10.0.0.1", AclOperation.WRITE, ResourceType.TOPIC)
    assert a.authorize("User:admin", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "t")
    a.apply_replicated([])  # the controller's image: no ACL at all
    assert a.authorize("User:alice", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "t")
