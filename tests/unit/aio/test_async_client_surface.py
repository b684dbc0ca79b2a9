"""The async producer and consumer offer every public method and property of their sync core with the same
parameters (as ``test_async_admin_surface`` for the admin client), so a method added to the sync client and
forgotten in its async twin fails here. The few sync methods without a twin are listed with the reason."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pykafka_client.aio import AsyncKafkaConsumer, AsyncKafkaProducer, AsyncKafkaShareConsumer
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.consumer.kafka_share_consumer import KafkaShareConsumer
from pykafka_client.producer.kafka_producer import KafkaProducer

#: sync methods the async client does not offer, and why
NO_ASYNC_TWIN: dict[type, dict[str, str]] = {
    KafkaProducer: {
        "wait_on_metadata": "the sync core's blocking wait; async send runs it on a worker thread itself, "
                            "and await partitions_for() is the user's way to wait for a topic",
        "append_to_open_batch": "the sync core's never-waiting compiled append, which async send calls itself",
    },
    KafkaConsumer: {
        "wakeup": "cancelling the awaiting task interrupts the call (the async consumer calls wakeup itself)",
        "clear_wakeup": "the async consumer's own thread drops a wakeup left by a cancelled call",
        "commit_async": "await commit() (= commit_sync); a task that must not wait spawns it",
        "poll_with": "the sync core's hook for other collectors (column_fetch.poll_columns); async has poll",
    },
    KafkaShareConsumer: {
        "wakeup": "cancelling the awaiting task interrupts the call (the async consumer calls wakeup itself)",
        "clear_wakeup": "the async consumer's own thread drops a wakeup left by a cancelled call",
    },
}
#: async methods that stay plain methods: non-blocking snapshots (no I/O, no lock held for long)
PLAIN_METHODS = {"metrics", "producer_id_and_epoch"}

PAIRS = [(KafkaProducer, AsyncKafkaProducer), (KafkaConsumer, AsyncKafkaConsumer),
         (KafkaShareConsumer, AsyncKafkaShareConsumer)]


def _public(cls: type) -> dict[str, Callable[..., Any] | property]:
    return {name: member for name, member in vars(cls).items()
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))}


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=["producer", "consumer", "share_consumer"])
def test_every_sync_method_has_an_async_twin_with_the_same_parameters(sync_cls: type, async_cls: type) -> None:
    sync_members = _public(sync_cls)
    async_members = _public(async_cls)
    excused = NO_ASYNC_TWIN[sync_cls]
    missing = sorted(set(sync_members) - set(async_members) - set(excused))
    assert not missing, f"{async_cls.__name__} lacks {missing} (add it, or list it in NO_ASYNC_TWIN with the reason)"
    stale = sorted(set(excused) - set(sync_members))
    assert not stale, f"NO_ASYNC_TWIN lists {stale}, which {sync_cls.__name__} no longer has"
    for name, member in sync_members.items():
        if name in excused:
            continue
        twin = async_members[name]
        if isinstance(member, property):
            assert isinstance(twin, property), f"{async_cls.__name__}.{name} should be a property"
            continue
        assert inspect.isfunction(twin), f"{async_cls.__name__}.{name} should be a method"
        if name in PLAIN_METHODS:
            assert not inspect.iscoroutinefunction(twin), name
        else:
            assert inspect.iscoroutinefunction(twin), f"{async_cls.__name__}.{name} should be a coroutine function"
        assert list(inspect.signature(twin).parameters) == list(inspect.signature(member).parameters), name


def test_the_parity_check_sees_a_method_added_to_the_sync_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above fails when the sync producer gains a public method its twin lacks."""

    def pause_sending(self: KafkaProducer) -> None: ...

    monkeypatch.setattr(KafkaProducer, "pause_sending", pause_sending, raising=False)
    with pytest.raises(AssertionError, match=r"lacks.*pause_sending"):
        test_every_sync_method_has_an_async_twin_with_the_same_parameters(KafkaProducer, AsyncKafkaProducer)


# --- the async clients, the columnar fetch and the Spark connector use the sync core's public surface only -------

ROOT = Path(__file__).resolve().parents[3]
#: modules that sit on the sync core: they may use its public typed members only
ON_THE_CORE = [*sorted((ROOT / "pykafka_client" / "aio").glob("*.py")), ROOT / "pykafka_client/consumer/column_fetch.py",
               *sorted((ROOT / "spark_connector").glob("*.py")), ROOT / "pyspark_pykafka/__init__.py",
               ROOT / "mini_broker/network/processor.py"]
#: where a getattr/hasattr probe of a named member is allowed: on third-party objects (pyarrow, pyspark)
PROBES_ALLOWED = {"spark_connector/arrow_records.py", "spark_connector/batch_writer.py"}


def private_reaches(source: str, *, probes_allowed: bool = False) -> list[str]:
    """``obj._member`` where ``obj`` is not ``self`` / ``cls``, and ``getattr(obj, "name")`` probes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        if (not probes_allowed and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_modules_on_the_sync_core_use_its_public_surface_only() -> None:
    bad = []
    for path in ON_THE_CORE:
        where = str(path.relative_to(ROOT))
        for hit in private_reaches(path.read_text(encoding="utf-8"), probes_allowed=where in PROBES_ALLOWED):
            bad.append(f"{where}:{hit}")
    assert not bad, "reaches into another object's private members (give it a public typed method):\n" + "\n".join(bad)


def test_the_reach_check_sees_private_reads_and_probes() -> None:
    source = "def f(p, s):\n    p._closed\n    s.sender._waiters\n    getattr(s.client, 'selector')\n    self._x\n"
    assert private_reaches(source) == ["2: p._closed", "3: s.sender._waiters", "4: getattr(s.client, 'selector')"]
