"""The layer rule (docs/ARCHITECTURE.md, "Layers"), checked on the source of every module.

Layers, bottom up; a module may import its own layer and the layers below, never one above:

1. foundation:   errors, errors_base, errors_generated, utils, _version
2. definitions:  structs, config, common_client_configs, serialization
3. protocol:     protocol (wire types, generated messages, headers, record batches)
4. transport:    network.transport (Selector, channels, TLS, SASL)
5. client core:  network (NetworkClient, Metadata, ConsumerNetworkClient, RequestFuture, ...)
6. shared client: client_utils (parse_bootstrap_servers, create_network_client)
7. clients:      producer | consumer | admin: siblings, none imports another
8. tools:        cli (the ``pykafka`` command), aio (the async clients): built on all three clients
9. package:      pykafka_client/__init__.py

mini_broker may import layers 1-4 of pykafka_client (errors, utils, structs, config, protocol,
network.transport) and nothing of the client core or the clients; the client never imports mini_broker.

Every import counts, including those under ``if TYPE_CHECKING:`` and inside functions: a type-only
import still ties the lower layer to the higher one (it must change when the higher one does) and is
one refactor away from a real import cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pykafka_client", "mini_broker")

#: (layer name, module prefixes), bottom up.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("pykafka_client.errors", "pykafka_client.errors_base", "pykafka_client.errors_generated",
                    "pykafka_client.utils", "pykafka_client._version")),
    ("definitions", ("pykafka_client.structs", "pykafka_client.config", "pykafka_client.common_client_configs",
                     "pykafka_client.serialization")),
    ("protocol", ("pykafka_client.protocol",)),
    ("transport", ("pykafka_client.network.transport",)),
    ("client core", ("pykafka_client.network",)),
    ("shared client", ("pykafka_client.client_utils",)),
    ("clients", ("pykafka_client.producer", "pykafka_client.consumer", "pykafka_client.admin")),
    ("tools", ("pykafka_client.cli", "pykafka_client.aio")),
)
PACKAGE_LAYER = len(LAYERS)  # pykafka_client/__init__.py
SIBLING_LAYER = "clients"
#: The highest pykafka_client layer mini_broker may import.
BROKER_MAY_IMPORT_UP_TO = "transport"


def _is(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> tuple[int, str]:
    """(index, prefix) of ``module``'s layer; mini_broker modules are (-1, "mini_broker")."""
    if _is(module, "mini_broker"):
        return -1, "mini_broker"
    if module == "pykafka_client":
        return PACKAGE_LAYER, "pykafka_client"
    best: tuple[int, str] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _is(module, prefix) and (best is None or len(prefix) > len(best[1])):
                best = (index, prefix)
    if best is None:
        raise LookupError(f"{module} is in no layer: add it to LAYERS here and to docs/ARCHITECTURE.md")
    return best


def layer_index(name: str) -> int:
    return [n for n, _ in LAYERS].index(name)


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.where}: {self.importer} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports_of(module: str, source: str, where: str, known: set[str], is_package: bool = False) -> list[Edge]:
    """Every pykafka_client / mini_broker module ``source`` imports (``from pkg import mod`` resolves to
    the submodule when there is one)."""
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module or ""
            for alias in node.names:
                sub = f"{parent}.{alias.name}"
                targets.append(sub if sub in known else parent)
        for target in targets:
            if target.split(".")[0] in PACKAGES:
                edges.append(Edge(module, target, f"{where}:{node.lineno}"))
    return edges


def violation(edge: Edge) -> str | None:
    """Why ``edge`` breaks the layer rule, or None."""
    src_index, src_prefix = layer_of(edge.importer)
    dst_index, dst_prefix = layer_of(edge.imported)
    if src_index == -1:
        if dst_index == -1:
            return None
        if dst_index > layer_index(BROKER_MAY_IMPORT_UP_TO):
            return f"mini_broker may import pykafka_client up to {BROKER_MAY_IMPORT_UP_TO}, not {dst_prefix}"
        return None
    if dst_index == -1:
        return "the client must not import mini_broker"
    if dst_index > src_index:
        above = "the package" if dst_index == PACKAGE_LAYER else LAYERS[dst_index][0]
        return f"upward import: {LAYERS[src_index][0]} ({src_prefix}) imports {above} ({dst_prefix})"
    if dst_index == src_index and LAYERS[src_index][0] == SIBLING_LAYER and src_prefix != dst_prefix:
        return f"sibling clients: {src_prefix} imports {dst_prefix}"
    return None


def collect_edges() -> list[Edge]:
    modules = all_modules()
    known = set(modules)
    edges: list[Edge] = []
    for name, path in modules.items():
        where = str(path.relative_to(ROOT))
        edges += imports_of(name, path.read_text(encoding="utf-8"), where, known, path.name == "__init__.py")
    return edges


def test_every_module_has_a_layer() -> None:
    missing = []
    for name in all_modules():
        try:
            layer_of(name)
        except LookupError as e:
            missing.append(str(e))
    assert not missing, "\n".join(missing)


def test_no_upward_or_sibling_import() -> None:
    bad = []
    for edge in collect_edges():
        why = violation(edge)
        if why is not None:
            bad.append(f"{edge}\n    {why}")
    assert not bad, "layer rule broken (see docs/ARCHITECTURE.md, Layers):\n" + "\n".join(bad)


# --- the checker itself -------------------------------------------------------------------------------


KNOWN = {
    "pykafka_client", "pykafka_client.errors", "pykafka_client.network", "pykafka_client.network.metadata",
    "pykafka_client.network.transport", "pykafka_client.network.transport.selector", "pykafka_client.consumer",
    "pykafka_client.consumer.config", "pykafka_client.admin", "pykafka_client.admin.config",
    "pykafka_client.protocol", "pykafka_client.client_utils", "mini_broker", "mini_broker.broker",
}


def check(module: str, source: str, is_package: bool = False) -> list[str]:
    return [why for e in imports_of(module, source, "x.py", KNOWN, is_package) if (why := violation(e))]


def test_checker_finds_an_upward_import_also_under_type_checking() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pykafka_client.network.metadata import Metadata\n"
    assert check("pykafka_client.network.transport.selector", source) == [
        "upward import: transport (pykafka_client.network.transport) imports client core (pykafka_client.network)"
    ]
    assert check("pykafka_client.network.metadata", "import pykafka_client\n") == [
        "upward import: client core (pykafka_client.network) imports the package (pykafka_client)"
    ]


def test_checker_finds_sibling_and_relative_imports() -> None:
    assert check("pykafka_client.consumer.kafka_consumer", "from pykafka_client.admin.config import X\n") == [
        "sibling clients: pykafka_client.consumer imports pykafka_client.admin"
    ]
    assert check("pykafka_client.consumer.kafka_consumer", "from ..admin import config\n") == [
        "sibling clients: pykafka_client.consumer imports pykafka_client.admin"
    ]
    assert check("pykafka_client.consumer.kafka_consumer", "from . import config\nfrom pykafka_client import errors\n") == []
    assert check("pykafka_client.consumer.kafka_consumer", "from pykafka_client.client_utils import x\n") == []


def test_checker_keeps_the_broker_off_the_client_core() -> None:
    assert check("mini_broker.broker", "from pykafka_client.network.transport.selector import Selector\n") == []
    assert check("mini_broker.broker", "from pykafka_client.network.metadata import Metadata\n") == [
        "mini_broker may import pykafka_client up to transport, not pykafka_client.network"
    ]
    assert check("pykafka_client.errors", "import mini_broker.broker\n") == ["the client must not import mini_broker"]


def test_unknown_module_has_no_layer() -> None:
    with pytest.raises(LookupError, match="in no layer"):
        layer_of("pykafka_client.somewhere_new")
