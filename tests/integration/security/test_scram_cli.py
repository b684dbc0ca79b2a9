"""``pykafka users scram add|describe|delete`` (the CLI's entry point, run in process) against a
MiniBroker with a PLAINTEXT and a SASL_PLAINTEXT listener: a user added by the CLI authenticates with SCRAM,
describe shows mechanism and iterations only, a deleted credential no longer authenticates, and a missing
user exits 4 with one error line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient
from pykafka_client.errors import SaslAuthenticationError
from tests.integration.cli.conftest import bootstrap_runner, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "num.network.threads": 1,
              "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
              "connection.failed.authentication.delay.ms": 0}
    with MiniBroker(config) as b:
        yield b


def _pykafka(broker: MiniBroker, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return bootstrap_runner(broker.listener_bootstrap("PLAINTEXT"))(*args, input=input)


def _authenticates(broker: MiniBroker, user: str, password: str, mechanism: str) -> bool:
    config = {"bootstrap.servers": broker.listener_bootstrap("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    try:
        with AdminClient(config) as admin:
            admin.describe_cluster(timeout=20)
    except SaslAuthenticationError:
        return False
    return True


def test_add_describe_delete(broker: MiniBroker) -> None:
    added = _pykafka(broker, "users", "scram", "add", "--user", "carol", "--mechanism", "SCRAM-SHA-512",
                     "--password", "carol-secret", "--iterations", "8192")
    assert added.returncode == 0, added.stderr.decode()
    # the password from stdin (no --password, not a terminal)
    added = _pykafka(broker, "users", "scram", "add", "--user", "carol", input=b"carol-256\n")
    assert added.returncode == 0, added.stderr.decode()
    assert _authenticates(broker, "carol", "carol-secret", "SCRAM-SHA-512")
    assert _authenticates(broker, "carol", "carol-256", "SCRAM-SHA-256")
    assert not _authenticates(broker, "carol", "carol-256", "SCRAM-SHA-512")

    described = _pykafka(broker, "users", "scram", "describe", "--user", "carol", "--output", "json")
    assert described.returncode == 0, described.stderr.decode()
    rows = json.loads(described.stdout)
    assert sorted((r["mechanism"], r["iterations"]) for r in rows) == [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]
    assert b"carol-secret" not in described.stdout
    table = _pykafka(broker, "users", "scram", "describe").stdout.decode()
    assert table.split()[:3] == ["USER", "MECHANISM", "ITERATIONS"] and "carol" in table

    deleted = _pykafka(broker, "users", "scram", "delete", "--user", "carol", "--mechanism", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr.decode()
    assert not _authenticates(broker, "carol", "carol-secret", "SCRAM-SHA-512")
    assert _authenticates(broker, "carol", "carol-256", "SCRAM-SHA-256")


def test_missing_user_exits_not_found(broker: MiniBroker) -> None:
    missing = _pykafka(broker, "users", "scram", "describe", "--user", "nobody")
    assert missing.returncode == 4
    assert "nobody" in one_error_line(missing) or "pykafka users scram describe" in one_error_line(missing)
    gone = _pykafka(broker, "users", "scram", "delete", "--user", "nobody")
    assert gone.returncode == 4, gone.stderr.decode()


def test_too_few_iterations_and_no_password_are_refused(broker: MiniBroker) -> None:
    few = _pykafka(broker, "users", "scram", "add", "--user", "dan", "--password", "x", "--iterations", "10")
    assert few.returncode == 1 and "iterations" in one_error_line(few).lower()
    empty = _pykafka(broker, "users", "scram", "add", "--user", "dan", input=b"")
    assert empty.returncode == 2 and "no password for dan" in one_error_line(empty)
