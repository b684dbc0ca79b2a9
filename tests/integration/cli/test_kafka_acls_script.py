"""``$(pykafka kafka-path)/bin/kafka-acls.sh`` run by path against a MiniBroker with the StandardAuthorizer
(the PLAINTEXT principal ``User:ANONYMOUS`` is a super user): Kafka's ``--add`` / ``--list`` / ``--remove``
output (``Adding ACLs for resource `ResourcePattern(...)`:`` and ``Current ACLs for resource ...``, one
``(principal=..., host=..., operation=..., permissionType=...)`` line per entry), the ``--producer`` /
``--consumer`` conveniences, ``--principal`` listing, the ``--force``-less confirmation, Kafka's usage errors
(exit 1), and a broker without an authorizer."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import AdminClient
from tests.integration.cli.conftest import run_script, runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS",
              "group.initial.rebalance.delay.ms": 0}
    with MiniBroker(config) as b:
        yield b


@pytest.fixture(scope="module")
def acls_script(broker: MiniBroker) -> Path:
    done = runner(broker)("kafka-path")
    assert done.returncode == 0, done.stderr
    script = Path(done.stdout.decode().strip()) / "bin" / "kafka-acls.sh"
    assert script.is_file()
    return script


def _run(script: Path, broker: MiniBroker, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``script --bootstrap-server BROKER args...`` in this process, as its shim runs it (test_cli_entry_points.py
    runs the shim itself)."""
    return run_script(script.name, ["--bootstrap-server", broker.bootstrap_servers, *args], input=input,
                      bootstrap_env=broker.bootstrap_servers)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def _bindings(broker: MiniBroker) -> set[tuple[str, str, str, str, str]]:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        return {(b.pattern.resource_type.name, b.pattern.name, b.pattern.pattern_type.name, b.entry.principal,
                 b.entry.operation.name) for b in admin.describe_acls(timeout=10)}


def test_add_list_remove_with_kafkas_output(broker: MiniBroker, acls_script: Path) -> None:
    pattern = "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`"
    added = _ok(_run(acls_script, broker, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                     "--topic", "orders"))
    assert added.startswith(f"Adding ACLs for resource {pattern}: \n \t{ALICE_READ} \n\n"), added
    assert f"Current ACLs for resource {pattern}: \n \t{ALICE_READ} \n" in added
    assert ("TOPIC", "orders", "LITERAL", "User:alice", "READ") in _bindings(broker)

    listed = _ok(_run(acls_script, broker, "--list", "--topic", "orders"))
    assert listed == f"Current ACLs for resource {pattern}: \n \t{ALICE_READ} \n\n"
    everything = _ok(_run(acls_script, broker, "--list"))
    assert ALICE_READ in everything

    # without --force the question is asked; "n" keeps the ACL
    kept = _run(acls_script, broker, "--remove", "--allow-principal", "User:alice", "--operation", "Read",
                "--topic", "orders", input="n\n")
    assert "Are you sure you want to remove ACLs: \n \t" + ALICE_READ in _ok(kept)
    assert ("TOPIC", "orders", "LITERAL", "User:alice", "READ") in _bindings(broker)
    removed = _ok(_run(acls_script, broker, "--remove", "--force", "--allow-principal", "User:alice",
                       "--operation", "Read", "--topic", "orders"))
    assert "Are you sure" not in removed
    assert ("TOPIC", "orders", "LITERAL", "User:alice", "READ") not in _bindings(broker)


def test_producer_and_consumer_conveniences(broker: MiniBroker, acls_script: Path) -> None:
    _ok(_run(acls_script, broker, "--add", "--allow-principal", "User:bob", "--producer", "--idempotent",
             "--topic", "pay-", "--resource-pattern-type", "prefixed", "--transactional-id", "pay-tx"))
    _ok(_run(acls_script, broker, "--add", "--allow-principal", "User:bob", "--consumer", "--topic", "pay-",
             "--group", "pay-readers"))
    found = {b for b in _bindings(broker) if b[3] == "User:bob"}
    assert found == {
        ("TOPIC", "pay-", "PREFIXED", "User:bob", "WRITE"), ("TOPIC", "pay-", "PREFIXED", "User:bob", "DESCRIBE"),
        ("TOPIC", "pay-", "PREFIXED", "User:bob", "CREATE"),
        ("TRANSACTIONAL_ID", "pay-tx", "PREFIXED", "User:bob", "WRITE"),
        ("TRANSACTIONAL_ID", "pay-tx", "PREFIXED", "User:bob", "DESCRIBE"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:bob", "IDEMPOTENT_WRITE"),
        ("TOPIC", "pay-", "LITERAL", "User:bob", "READ"), ("TOPIC", "pay-", "LITERAL", "User:bob", "DESCRIBE"),
        ("GROUP", "pay-readers", "LITERAL", "User:bob", "READ"),
    }
    # --principal lists only bob's entries, under Kafka's heading; MATCH finds the prefixed pattern of a topic
    mine = _ok(_run(acls_script, broker, "--list", "--principal", "User:bob"))
    assert mine.startswith("ACLs for principal `User:bob`\n") and "User:alice" not in mine
    matched = _ok(_run(acls_script, broker, "--list", "--topic", "pay-eu", "--resource-pattern-type", "match"))
    assert "name=pay-, patternType=PREFIXED" in matched and "operation=WRITE" in matched
    # removing every ACL of a resource (no principal): all of the prefixed topic pattern go
    _ok(_run(acls_script, broker, "--remove", "--force", "--topic", "pay-", "--resource-pattern-type", "prefixed"))
    assert not {b for b in _bindings(broker) if b[0] == "TOPIC" and b[2] == "PREFIXED"}


@pytest.mark.parametrize(("args", "message"), [
    ((), "Command must include exactly one action: --add, --remove or --list"),
    (("--add", "--list"), "Command must include exactly one action: --add, --remove or --list"),
    (("--add", "--topic", "t", "--resource-pattern-type", "match"),
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (("--add", "--topic", "t", "--operation", "Read"),
     "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
    (("--add", "--allow-principal", "User:a"),
     "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
     "--transactional-id <transactionalId>"),
    (("--producer", "--add", "--allow-principal", "User:a", "--group", "g"),
     "With --producer you must specify a --topic"),
    (("--list", "--allow-principal", "User:a"), 'Option "[list]" can\'t be used with option "[allow-principal]"'),
])
def test_usage_errors_exit_1(broker: MiniBroker, acls_script: Path, args: tuple[str, ...], message: str) -> None:
    done = _run(acls_script, broker, *args)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.splitlines()[0] == message, done.stderr


def test_broker_without_an_authorizer(acls_script: Path) -> None:
    with MiniBroker() as plain:
        done = _run(acls_script, plain, "--list")
    assert done.returncode == 1
    assert done.stdout.startswith("Error while executing ACL command: "), done.stdout
    assert "authorizer.class.name" in done.stdout

