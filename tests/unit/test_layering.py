"""The layer rule and the I/O rules (docs/ARCHITECTURE.md, "Layers" and "Where I/O happens"), checked on the
source of every module of pykafka_client, mini_broker, spark_connector and pyspark_pykafka.

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
10. connector:    spark_connector (the Spark data source, on the clients' public surface and below)
11. registration: pyspark_pykafka (PySpark's auto-registration hook: re-exports the connector's source)

mini_broker may import layers 1-4 of pykafka_client (errors, utils, structs, config, protocol,
network.transport) and nothing of the client core or the clients; the client never imports mini_broker;
neither the client nor the broker imports the connector, and the connector does not import the broker.

The I/O rules (second half of this file): sockets, files and the system clock are each used only by the
modules of an explicit allow-list, each entry with the reason; a new user fails the test, and so does an
entry that no longer uses what it is allowed (keep the lists minimal).

Every import counts, including those under ``if TYPE_CHECKING:`` and inside functions: a type-only
import still ties the lower layer to the higher one (it must change when the higher one does) and is
one refactor away from a real import cycle.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pykafka_client", "mini_broker", "spark_connector", "pyspark_pykafka")

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
#: The layers above the client package, bottom up.
CONNECTOR_LAYERS = ("spark_connector", "pyspark_pykafka")
SIBLING_LAYER = "clients"
#: The highest pykafka_client layer mini_broker may import.
BROKER_MAY_IMPORT_UP_TO = "transport"


def _is(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> tuple[int, str]:
    """(index, prefix) of ``module``'s layer; mini_broker modules are (-1, "mini_broker")."""
    if _is(module, "mini_broker"):
        return -1, "mini_broker"
    for offset, top in enumerate(CONNECTOR_LAYERS, start=1):
        if _is(module, top):
            return PACKAGE_LAYER + offset, top
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


def layer_name(index: int) -> str:
    if index == PACKAGE_LAYER:
        return "the package"
    if index > PACKAGE_LAYER:
        return ("connector", "registration")[index - PACKAGE_LAYER - 1]
    return LAYERS[index][0]


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
        if dst_index > PACKAGE_LAYER:
            return f"mini_broker must not import the connector ({dst_prefix})"
        if dst_index > layer_index(BROKER_MAY_IMPORT_UP_TO):
            return f"mini_broker may import pykafka_client up to {BROKER_MAY_IMPORT_UP_TO}, not {dst_prefix}"
        return None
    if dst_index == -1:
        if src_index > PACKAGE_LAYER:
            return f"the connector ({src_prefix}) uses the client, not mini_broker"
        return "the client must not import mini_broker"
    if dst_index > src_index:
        return f"upward import: {layer_name(src_index)} ({src_prefix}) imports {layer_name(dst_index)} ({dst_prefix})"
    if src_index < PACKAGE_LAYER and dst_index == src_index and LAYERS[src_index][0] == SIBLING_LAYER \
            and src_prefix != dst_prefix:
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
    "spark_connector", "spark_connector.options", "spark_connector.source", "pyspark_pykafka",
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


def test_checker_places_the_connector_above_the_client() -> None:
    assert check("spark_connector.options", "from pykafka_client.consumer.config import CONSUMER_CONFIG\n") == []
    assert check("pyspark_pykafka", "from spark_connector.source import KafkaDataSource\n", is_package=True) == []
    assert check("pykafka_client.consumer.kafka_consumer", "import spark_connector.options\n") == [
        "upward import: clients (pykafka_client.consumer) imports connector (spark_connector)"
    ]
    assert check("spark_connector.source", "import pyspark_pykafka\n") == [
        "upward import: connector (spark_connector) imports registration (pyspark_pykafka)"
    ]
    assert check("mini_broker.broker", "from spark_connector import options\n") == [
        "mini_broker must not import the connector (spark_connector)"
    ]
    assert check("spark_connector.writer", "from mini_broker.broker import MiniBroker\n") == [
        "the connector (spark_connector) uses the client, not mini_broker"
    ]


def test_unknown_module_has_no_layer() -> None:
    with pytest.raises(LookupError, match="in no layer"):
        layer_of("pykafka_client.somewhere_new")


# --- where I/O happens: sockets, files, the system clock ----------------------------------------------
#
# Each rule is an allow-list of modules (a key also covers its submodules), each with why it is allowed.
# A module not listed that starts using sockets, files or the clock fails the test: give it a seam instead
# (a Selectable, the log layer, an injected Time), or add it here with the reason. An entry that no longer
# needs its permission fails too, so the lists stay what the code is.

#: Modules that may use sockets (import ``socket``, ``ssl``, ``selectors`` or ``select``).
SOCKETS_ALLOWED: dict[str, str] = {
    "pykafka_client.network.transport.selector": "the client's (and the broker's) one selector loop",
    "pykafka_client.network.transport.channel": "a channel registers its socket with the selector",
    "pykafka_client.network.transport.channel_builder": "builds plaintext / TLS channels around new sockets",
    "pykafka_client.network.transport.transport_layer": "socket reads and writes, sendfile, the TLS handshake",
    "pykafka_client.network.transport.ssl_factory": "builds the ssl.SSLContext from the ssl.* configs",
    "pykafka_client.network.cluster_connection_states": "DNS resolution (socket.getaddrinfo) of a node's host",
    "pykafka_client.network.error_text": "names a failed connect's cause from socket.gaierror (no I/O)",
    "mini_broker.network.acceptor": "the broker's listening sockets (accept, then hand to a processor)",
    "mini_broker.network.processor": "takes over accepted sockets and registers them with its selector",
    "mini_broker.broker": "socket.gethostname() for an advertised listener on a wildcard host",
    "mini_broker.cluster.controller": "the cluster controller's own RPC server socket (not a Kafka listener)",
    "mini_broker.cluster.controller_rpc": "a broker's blocking RPC connection to the controller",
    "mini_broker.security.inter_broker": "blocking connections between brokers over the inter-broker listener: TCP, "
                                         "TLS and the SASL exchange (replica fetches, txn markers and checks)",
    "mini_broker.cluster.mini_cluster": "picks free ports for the brokers of a test cluster",
    "mini_broker.security.listener_security": "builds a TLS listener's ssl.SSLContext (through ssl_factory)",
}

#: Modules that may touch the file system (``open``, ``os`` file calls, ``os.path`` queries of the disk,
#: ``shutil``, ``tempfile``, ``fcntl``).
FILES_ALLOWED: dict[str, str] = {
    "mini_broker.log": "the log layer: segments, indexes, checkpoints, the data-dir lock",
    "mini_broker.utils.atomic_file": "the one atomic_write (temp file, fsync, rename, fsync the directory)",
    "mini_broker.producer_state.producer_state_manager": "producer-state snapshot files of a partition log",
    "mini_broker.producer_state.producer_id_manager": "the producer-id block file of the data dir",
    "mini_broker.server.metadata_cache": "persists the metadata image (topics, ids) in the data dir",
    "mini_broker.security.dev_certificates": "mini-broker --generate-test-certificate: runs openssl in a temporary "
                                             "directory and writes the test CA and broker PEM files",
    "mini_broker.security.authorizer": "reads the ACL file of the data dir at start (writes go through atomic_write)",
    "mini_broker.group.group_metadata_manager": "swaps the compacted __consumer_offsets partition directories",
    "mini_broker.coordinator.partition": "a single broker's internal topic: reads its partition.count file and "
                                         "finds its partition directories (the count is written by atomic_write)",
    "mini_broker.cluster.controller": "the controller's state directory",
    "mini_broker.broker": "a temporary data dir for MiniBroker() without log.dirs, removed on close",
    "mini_broker.cluster.mini_cluster": "temporary data dirs of a test cluster",
    "mini_broker.config": "reads server.properties (KafkaConfig.from_properties_file)",
    "mini_broker.security.listener_security": "inline PEM keys go through a private temp file (ssl loads files only)",
    "mini_broker.security.scram_credentials": "reads the SCRAM credential file of the data dir (written by atomic_write)",
    "mini_broker.__main__": "reads the --config properties file",
    "pykafka_client.network.transport.transport_layer": "sends a log file region (sendfile, or pread for TLS) "
                                                        "handed in by the broker's fetch",
    "pykafka_client.cli.common": "reads the --command-config properties file",
    "pykafka_client.cli.produce": "reads the records to produce from a file",
    "spark_connector.exactly_once": "the exactly-once sink's state dir (pending transactions per epoch)",
    "spark_connector.task_producer": "the test-only failure marker file (O_EXCL: the first task only)",
}

#: Modules that may read the system clock or sleep (use the ``time`` module) instead of an injected ``Time``.
CLOCK_ALLOWED: dict[str, str] = {
    "pykafka_client.utils.time": "SystemTime: the injected Time's real implementation",
    "pykafka_client.producer.kafka_producer": "send's hot path reads the clock directly when SystemTime is "
                                              "injected (saves a call)",
    "pykafka_client.producer.future_record_metadata": "Future.get(timeout): a user-facing wait",
    "pykafka_client.aio": "the async API's own deadlines (max.block.ms, poll) and loop-yield cadence",
    "pykafka_client.cli": "the command-line tools: wall-clock stamps and rates for people",
    "mini_broker.network.acceptor": "connection-creation throttling and accept backoff (monotonic)",
    "mini_broker.quota.throttled_channel_reaper": "releases throttled channels when their delay ends (monotonic)",
    "mini_broker.cluster.replication": "waits for the cluster's first metadata; the HW checkpoint interval",
    "mini_broker.cluster.mini_cluster": "a test cluster's waits for its brokers",
    "spark_connector.offset_reader": "fetchOffset.retryIntervalMs between retries (Spark's behaviour)",
    "spark_connector.partition_reader": "kafkaConsumer.pollTimeoutMs without progress (Spark's behaviour)",
    "spark_connector.stream_reader": "the wall-clock 'now' of a streaming trigger (timestamp offsets)",
}

SOCKET_MODULES = frozenset({"socket", "ssl", "selectors", "select"})
FILE_MODULES = frozenset({"shutil", "tempfile", "fcntl"})
OS_FILE_CALLS = frozenset({
    "open", "close", "read", "write", "pread", "pwrite", "sendfile", "fsync", "fdatasync", "ftruncate", "truncate",
    "lseek", "stat", "lstat", "listdir", "scandir", "walk", "makedirs", "mkdir", "remove", "unlink", "rmdir",
    "removedirs", "rename", "renames", "replace", "link", "symlink", "chmod", "utime", "getcwd", "chdir",
})
OS_PATH_QUERIES = frozenset({"exists", "lexists", "isdir", "isfile", "islink", "getsize", "getmtime", "samefile"})


@dataclass(frozen=True)
class IoUse:
    kind: str  # "sockets" | "files" | "clock"
    what: str
    line: int


def io_uses(source: str) -> list[IoUse]:
    """Every use of sockets, files or the system clock in ``source`` (imports, calls)."""
    tree = ast.parse(source)
    time_names: set[str] = set()
    os_names: set[str] = set()
    uses: list[IoUse] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in SOCKET_MODULES:
                    uses.append(IoUse("sockets", f"import {alias.name}", node.lineno))
                elif root in FILE_MODULES:
                    uses.append(IoUse("files", f"import {alias.name}", node.lineno))
                elif alias.name == "time":
                    time_names.add(alias.asname or "time")
                elif alias.name == "os":
                    os_names.add(alias.asname or "os")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            root = node.module.split(".")[0]
            if root in SOCKET_MODULES:
                uses.append(IoUse("sockets", f"from {node.module} import ...", node.lineno))
            elif root in FILE_MODULES:
                uses.append(IoUse("files", f"from {node.module} import ...", node.lineno))
            elif node.module == "time":
                uses.append(IoUse("clock", f"from time import {', '.join(a.name for a in node.names)}", node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            uses.append(IoUse("files", "open()", node.lineno))
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in time_names:
            uses.append(IoUse("clock", f"time.{node.attr}", node.lineno))
        elif isinstance(value, ast.Name) and value.id in os_names and node.attr in OS_FILE_CALLS:
            uses.append(IoUse("files", f"os.{node.attr}", node.lineno))
        elif (isinstance(value, ast.Attribute) and value.attr == "path" and isinstance(value.value, ast.Name)
              and value.value.id in os_names and node.attr in OS_PATH_QUERIES):
            uses.append(IoUse("files", f"os.path.{node.attr}", node.lineno))
    return uses


ALLOWED: dict[str, dict[str, str]] = {"sockets": SOCKETS_ALLOWED, "files": FILES_ALLOWED, "clock": CLOCK_ALLOWED}


def allowed_by(module: str, allow: dict[str, str]) -> str | None:
    return next((key for key in allow if _is(module, key)), None)


@functools.cache
def io_by_module() -> dict[str, list[IoUse]]:
    return {name: io_uses(path.read_text(encoding="utf-8")) for name, path in all_modules().items()}


@pytest.mark.parametrize("kind", list(ALLOWED))
def test_io_only_in_allowed_modules(kind: str) -> None:
    allow = ALLOWED[kind]
    found = io_by_module()
    bad = [f"{module}:{use.line}: {use.what}" for module, uses in sorted(found.items())
           for use in uses if use.kind == kind and allowed_by(module, allow) is None]
    assert not bad, (f"{kind} used outside the allow-list (docs/ARCHITECTURE.md, 'Where I/O happens'); use the "
                     f"seam, or add the module to {kind.upper()}_ALLOWED in tests/unit/test_layering.py with the reason:\n"
                     + "\n".join(bad))
    users = {allowed_by(module, allow) for module, uses in found.items() if any(u.kind == kind for u in uses)}
    stale = sorted(set(allow) - users)
    assert not stale, f"{kind.upper()}_ALLOWED lists {stale}, which no longer use {kind}: remove them"


def test_io_checker_sees_each_kind_of_use() -> None:
    source = (
        "import os, time as _t\nimport socket\nfrom shutil import rmtree\n"
        "def f(p):\n    open(p).read()\n    os.replace(p, p)\n    os.path.exists(p)\n    os.path.join(p, p)\n"
        "    _t.sleep(1)\n    return _t.monotonic()\n"
    )
    assert [(u.kind, u.what) for u in sorted(io_uses(source), key=lambda u: (u.line, u.what))] == [
        ("sockets", "import socket"), ("files", "from shutil import ..."), ("files", "open()"),
        ("files", "os.replace"), ("files", "os.path.exists"), ("clock", "time.sleep"), ("clock", "time.monotonic"),
    ]
    assert io_uses("from time import monotonic\n") == [IoUse("clock", "from time import monotonic", 1)]
    assert io_uses("from pykafka_client.utils.time import Time\nimport threading\n") == []


def test_a_new_socket_user_is_not_allowed() -> None:
    assert allowed_by("pykafka_client.network.transport.selector", SOCKETS_ALLOWED) is not None
    assert allowed_by("pykafka_client.network.network_client", SOCKETS_ALLOWED) is None
    assert allowed_by("mini_broker.log.log_segment", FILES_ALLOWED) == "mini_broker.log"
    assert allowed_by("mini_broker.server.replica_manager", FILES_ALLOWED) is None
    assert allowed_by("pykafka_client.consumer.fetcher", CLOCK_ALLOWED) is None
