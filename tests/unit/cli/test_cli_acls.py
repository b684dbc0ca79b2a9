"""``pykafka acls``: operation names as kafka-acls.sh takes them, the filters list/remove build from the flags, and
the usage errors (exit 2) before anything is sent."""

from __future__ import annotations

import argparse

import pytest

from pykafka_client.cli import acls
from pykafka_client.cli.common import EXIT_USAGE, CliError
from pykafka_client.cli.main import exit_code_and_message, parse_args
from pykafka_client.errors import SecurityDisabledError, TopicAuthorizationFailedError
from pykafka_client.protocol.acl import (
    AccessControlEntryFilter,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)


@pytest.mark.parametrize("text,op", [("Read", AclOperation.READ), ("IdempotentWrite", AclOperation.IDEMPOTENT_WRITE),
                                     ("describe-configs", AclOperation.DESCRIBE_CONFIGS),
                                     ("CLUSTER_ACTION", AclOperation.CLUSTER_ACTION), ("all", AclOperation.ALL)])
def test_operation_names(text: str, op: AclOperation) -> None:
    assert acls.parse_operation(text) is op


def test_unknown_operation_is_a_usage_error_naming_the_choices() -> None:
    with pytest.raises(CliError, match="IdempotentWrite") as e:
        acls.parse_operation("Any")
    assert e.value.exit_code == EXIT_USAGE


def _args(*argv: str) -> argparse.Namespace:
    return parse_args(["acls", *argv])


def test_list_filters() -> None:
    everything = _args("list")
    assert acls.filters_from_args(everything, None) == [AclBindingFilter()]
    match = _args("list", "--topic", "orders", "--resource-pattern-type", "MATCH")
    assert acls.filters_from_args(match, None) == [AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders",
                                                                                 PatternType.MATCH))]


def test_remove_filters_cover_each_principal_host_and_operation() -> None:
    args = _args("remove", "--topic", "t", "--group", "g", "--deny-principal", "User:bob", "--operation", "Write")
    assert acls.filters_from_args(args, acls.entries_from_args(args, [AclOperation.WRITE])) == [
        AclBindingFilter(ResourcePatternFilter(rt, name, PatternType.LITERAL),
                         AccessControlEntryFilter("User:bob", None, AclOperation.WRITE, AclPermissionType.DENY))
        for rt, name in ((ResourceType.TOPIC, "t"), (ResourceType.GROUP, "g"))]


@pytest.mark.parametrize("argv,message", [
    (("add", "--allow-principal", "User:a", "--operation", "Read"), "name a resource"),
    (("add", "--topic", "t", "--allow-principal", "User:a"), "--operation"),
    (("add", "--topic", "t", "--operation", "Read"), "--allow-principal"),
    (("add", "--topic", "t", "--allow-principal", "alice", "--operation", "Read"), "User:alice"),
    (("remove", "--allow-principal", "User:a"), "name the resources"),
    # a host alone would make a filter that matches every ACL of the topic
    (("remove", "--topic", "t", "--allow-host", "10.0.0.9"), "--allow-host needs --allow-principal"),
    (("remove", "--topic", "t", "--deny-host", "10.0.0.9"), "--deny-host needs --deny-principal"),
])
def test_usage_errors(argv: tuple[str, ...], message: str) -> None:
    args = _args(*argv)
    with pytest.raises(CliError, match=message) as e:
        args.run(args)
    assert e.value.exit_code == EXIT_USAGE


def test_authorization_failures_say_what_to_do() -> None:
    args = _args("list")
    code, text = exit_code_and_message(SecurityDisabledError("x"), args)
    assert code == 1 and "authorizer.class.name" in text
    code, text = exit_code_and_message(TopicAuthorizationFailedError("t"), args)
    assert code == 1 and "pykafka acls list" in text
