"""The README's python snippets run as written (issue 22 items 1 and 6), the way a user runs them: extracted from
README.md, with only the bootstrap address changed to a MiniBroker's, by a venv's python named by path in a shell
where that venv is not activated. Twice: in a venv made by ``./dev setup`` (editable install) and in a fresh venv
after ``pip install '<wheel>[spark,trio]'``.

The Spark snippets use ``format("pykafka")`` with no registration: they pass only if PySpark's data-source lookup,
run by Spark's Python workers, finds ``pyspark_pykafka`` in that install, and only if the workers run the venv's
interpreter although ``python3`` on PATH is another one.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from pykafka_client.admin import NewTopic
from tests.packaging.installs import run, user_env
from tests.readme.blocks import code_blocks, python_blocks, with_bootstrap

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(1200)]

VENVS = ["dev_venv", "wheel_venv"]


def _run_snippet(python: Path, code: str, cwd: Path, name: str, timeout: float = 120) -> str:
    script = cwd / f"{name}.py"
    script.write_text(code, encoding="utf-8")
    return run(python, script, cwd=cwd, timeout=timeout)


def _create(bootstrap: str, topics: Iterable[str], partitions: int = 1) -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1) for t in topics])


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    with KafkaProducer({"bootstrap.servers": bootstrap, "key.serializer": "str", "value.serializer": "str"}) as p:
        for i, value in enumerate(values):
            p.send(topic, value, key=f"k{i}")


def _read_all(bootstrap: str, topic: str) -> list[str]:
    """Every committed value of ``topic``, in offset order per partition."""
    with KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as consumer:
        tps = [TopicPartition(topic, p.partition) for p in consumer.partitions_for(topic, timeout=10)]
        consumer.assign(tps)
        consumer.seek_to_beginning(tps)
        end = consumer.end_offsets(tps, timeout=10)
        values: list[str] = []
        while any(consumer.position(tp) < end[tp] for tp in tps):
            values += [r.value.decode() for r in consumer.poll(0.5) if r.value is not None]
        return values


@pytest.mark.parametrize("venv", VENVS)
def test_python_snippets_run(venv: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Quickstart, Async (asyncio, then trio) and Exactly-once copy, each in its own process, one broker."""
    python: Path = request.getfixturevalue(venv)
    quickstart, = python_blocks("Quickstart")
    on_asyncio, on_trio = python_blocks("Async")
    copier, = python_blocks("Exactly-once copy")
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
        bootstrap = broker.bootstrap_servers
        out = _run_snippet(python, with_bootstrap(quickstart, bootstrap), tmp_path, "quickstart")
        assert "written to partition" in out and "hello 9" in out and "last one" in out
        out = _run_snippet(python, with_bootstrap(on_asyncio, bootstrap), tmp_path, "async_asyncio")
        assert "written to partition" in out and "hello 9" in out
        out = _run_snippet(python, with_bootstrap(on_trio, bootstrap), tmp_path, "async_trio")
        assert "trio wrote offset 10" in out

        # the copier reads what is already in "input" (auto.offset.reset=earliest) and stops once idle
        words = [f"word-{i}" for i in range(50)]
        _create(bootstrap, ["input"])
        _produce(bootstrap, "input", words)
        _run_snippet(python, with_bootstrap(copier, bootstrap), tmp_path, "exactly_once_copy")
        assert _read_all(bootstrap, "output") == [w.upper() for w in words]


@pytest.mark.spark
@pytest.mark.parametrize("venv", VENVS)
def test_spark_snippets_run(venv: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The Spark section's blocks, in order in one process (the write block goes on with the read block's
    session): batch and streaming reads of "greetings", a batch write to "events", an exactly-once stream
    from "words" to "words-upper". Checkpoints are relative paths, under this test's directory."""
    python: Path = request.getfixturevalue(venv)
    code = "\n\n".join(python_blocks("Spark"))
    assert "register(" not in code  # format("pykafka") is found, not registered
    greetings = [f"greeting-{i}" for i in range(7)]
    words = ["alpha", "beta", "gamma"]
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
        bootstrap = broker.bootstrap_servers
        _create(bootstrap, ["greetings", "words"])  # the topics the snippets read
        _produce(bootstrap, "greetings", greetings)
        _produce(bootstrap, "words", words)
        out = _run_snippet(python, with_bootstrap(code, bootstrap), tmp_path, "spark_snippets", timeout=600)
        # the batch read's show() and the console sink's batch both print every greeting
        assert all(out.count(g) >= 2 for g in greetings), out[-4000:]
        events = _read_all(bootstrap, "events")
        assert sorted(json.loads(v)["id"] for v in events) == list(range(100))
        assert _read_all(bootstrap, "words-upper") == [w.upper() for w in words]


SECURED = "Run a secured broker"


def _shell_commands(section: str) -> list[str]:
    """The commands of the section's sh block (continuation lines joined, comments dropped)."""
    sh, = [b.code for b in code_blocks() if b.section == section and b.lang == "sh"]
    joined = sh.replace("\\\n", " ")
    return [line.split("   #", 1)[0].strip() for line in joined.splitlines() if line.strip()]


@pytest.mark.parametrize("venv", VENVS)
def test_secured_broker_snippets_run(venv: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The secured-broker section as a user runs it: its sh commands (the venv's ``mini-broker`` generating the
    test certificate, then a SASL_SSL broker on port 0 instead of 9092), confluent-kafka installed in the venv,
    then its python block from the directory holding ``certs/``: our client over PLAIN creates a topic and a
    SCRAM user and writes, confluent-kafka reads the record back as that user over SCRAM-SHA-256."""
    python: Path = request.getfixturevalue(venv)
    generate, start = _shell_commands(SECURED)
    assert generate.startswith(".venv/bin/mini-broker --generate-test-certificate ")
    assert start.startswith(".venv/bin/mini-broker --listeners SASL_SSL://127.0.0.1:9092 ")
    mini_broker = str(python.parent / "mini-broker")
    env = user_env()
    subprocess.run(["bash", "-c", generate.replace(".venv/bin/mini-broker", mini_broker, 1)], cwd=tmp_path, env=env,
                   check=True, timeout=120)
    assert (tmp_path / "certs" / "ca.pem").exists() and (tmp_path / "certs" / "broker.pem").exists()
    run(python, "-m", "pip", "install", "--quiet", "confluent-kafka>=2.5", cwd=tmp_path, timeout=600)
    command = start.replace(".venv/bin/mini-broker", mini_broker, 1).replace(":9092", ":0", 1)
    log = tmp_path / "secured-broker.log"
    with log.open("w") as out_file:
        broker = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=tmp_path, env=env,
                                  stdout=out_file, stderr=subprocess.STDOUT)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and broker.poll() is None and time.monotonic() < deadline:
            found = re.search(r"listening on SASL_SSL://127\.0\.0\.1:(\d+)", log.read_text())
            port = int(found.group(1)) if found else None
            time.sleep(0.2)
        assert port, f"the secured broker did not start:\n{log.read_text()[-4000:]}"
        code, = python_blocks(SECURED)
        out = _run_snippet(python, with_bootstrap(code, f"localhost:{port}"), tmp_path, "secured_broker")
        assert "bob read: sent over TLS by alice" in out, out
    finally:
        broker.terminate()
        broker.wait(timeout=30)
