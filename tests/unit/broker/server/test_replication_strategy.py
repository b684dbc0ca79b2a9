"""Replication is a strategy the server asks, never a nullable collaborator it tests: ``server/`` does not
import ``cluster/``, nothing compares a cluster with None, and both strategies implement the whole Protocol."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import mini_broker
from mini_broker.cluster.replication import ClusterReplication
from mini_broker.server.replication_strategy import ReplicationStrategy, SingleBrokerReplication

BROKER_ROOT = Path(mini_broker.__file__).parent


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


def test_the_server_package_does_not_import_the_cluster_package() -> None:
    offenders = [f"{p.relative_to(BROKER_ROOT)}: {m}" for p in sorted((BROKER_ROOT / "server").rglob("*.py"))
                 for m in _imports(p) if m == "mini_broker.cluster" or m.startswith("mini_broker.cluster.")]
    assert offenders == []


def test_no_module_asks_whether_the_broker_is_a_cluster_by_comparing_with_none() -> None:
    offenders = []
    for p in sorted(BROKER_ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                left = ast.unparse(node.left)
                if "cluster" in left.split(".")[-1] and any(ast.unparse(c) == "None" for c in node.comparators):
                    offenders.append(f"{p.relative_to(BROKER_ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def _protocol_members() -> set[str]:
    return {name for name, _ in inspect.getmembers(ReplicationStrategy) if not name.startswith("_")}


@pytest.mark.parametrize("strategy", [SingleBrokerReplication, ClusterReplication])
def test_each_strategy_implements_every_member_with_the_protocols_parameters(strategy: type) -> None:
    for name in sorted(_protocol_members()):
        assert hasattr(strategy, name), f"{strategy.__name__} lacks {name}"
        expected = getattr(ReplicationStrategy, name)
        actual = getattr(strategy, name)
        if callable(expected) and callable(actual):
            assert list(inspect.signature(actual).parameters) == list(inspect.signature(expected).parameters), name


def _typed(strategy: SingleBrokerReplication | ClusterReplication) -> ReplicationStrategy:
    return strategy  # mypy --strict: both satisfy the Protocol structurally
