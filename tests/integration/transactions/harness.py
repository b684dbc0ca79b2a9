"""Processes and helpers the transaction end-to-end tests share: a broker that can be SIGKILLed and restarted on
its data dir (mini_broker on a fixed port, or noida-db), the copier subprocess, and reading a topic back whole
under either isolation level with our consumer or confluent-kafka's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.integration.broker.broker_process import ROOT, BrokerProcess, ck, ck_admin
from tests.integration.noida import NoidaBroker, noida_binary
from tests.integration.tansu import free_port

#: mini_broker settings for these tests: no initial rebalance delay (a restarted copier rejoins at once) and
#: a short cleanup interval so a transaction past its timeout is aborted within the test's time.
MINI_OVERRIDES: dict[str, object] = {
    "group.initial.rebalance.delay.ms": 0,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
    "num.partitions": 1,
}


class RestartableBroker:
    """A broker process that is SIGKILLed and restarted on the same data dir. ``bootstrap`` may change across
    a restart (noida-db keeps its old port for a while), so callers re-read it."""

    kind = "?"

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    def kill9(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def log_tail(self) -> str:
        return ""


class MiniBrokerProcess(RestartableBroker):
    """``python -m mini_broker`` on one fixed loopback port, so clients reconnect to the restarted broker."""

    kind = "mini_broker"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.proc: BrokerProcess | None = None
        self.previous_output: list[str] = []
        self.start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        deadline = time.monotonic() + 20
        while True:  # the port of a killed broker can take a moment to be free again
            try:
                self.proc = BrokerProcess(self.data_dir, port=self.port, overrides=MINI_OVERRIDES,
                                          log_level=os.environ.get("EOS_BROKER_LOG_LEVEL", "WARNING"))
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill9()
        self.previous_output += self.proc.output
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.ensure_dead()
            self.previous_output += self.proc.output
            self.proc = None

    def log_tail(self) -> str:
        lines = self.previous_output + (self.proc.output if self.proc else [])
        return "".join(lines[-60:])


class NoidaProcess(RestartableBroker):
    """noida-db on its data dir; a restart comes up on a new port (noida-db holds the old one for a while)."""

    kind = "noida-db"

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        binary = noida_binary()
        assert binary is not None
        self.binary, self.data_dir, self.log_path = binary, data_dir, log_path
        self.broker: NoidaBroker | None = None
        self.start()

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return self.broker.bootstrap

    def start(self) -> None:
        self.broker = NoidaBroker(self.binary, self.data_dir, self.log_path)
        self.broker.start()

    def kill9(self) -> None:
        assert self.broker is not None and self.broker.proc is not None
        os.kill(self.broker.proc.pid, signal.SIGKILL)
        self.broker.proc.wait(10)
        self.broker.proc = None

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()

    def log_tail(self) -> str:
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-60:])
        except OSError:
            return ""


class CopierProcess:
    """``python -m tests.integration.transactions.copier`` with its output collected; ``copied`` is the
    latest ``committed N`` it printed."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.transactions.copier", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, cwd=str(ROOT))
        self.output: list[str] = []
        self.copied = 0
        self.aborted_on_purpose = 0
        self.done = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            if line.startswith("committed "):
                self.copied = int(line.split()[1])
            elif line.startswith("aborted "):
                self.aborted_on_purpose += 1
            elif line.startswith("done"):
                self.done = True

    def exited(self) -> int | None:
        return self.proc.poll()

    def dump_stacks(self) -> None:
        """Have a running copier print every thread's stack into its output (for a stall's diagnostics)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(0.5)

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(5)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([ck_admin.NewTopic(topic, partitions, 1)])[topic].result(20)


def input_value(partition: int, seq: int) -> bytes:
    return b"%d-%07d" % (partition, seq)


def split(records: int, partitions: int) -> list[int]:
    """How many of ``records`` go to each partition (as even as possible)."""
    return [records // partitions + (1 if p < records % partitions else 0) for p in range(partitions)]


def produce_input(bootstrap: str, topic: str, counts: list[int]) -> None:
    """``counts[p]`` records into partition p, values ``input_value(p, i)`` in order (plain idempotent
    confluent-kafka producer: the input is not under test)."""
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True,
                     "batch.num.messages": 2000})
    errors: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for seq in range(max(counts)):
        for partition, count in enumerate(counts):
            if seq >= count:
                continue
            while True:
                try:
                    p.produce(topic, input_value(partition, seq), b"k%d" % seq, partition=partition,
                              on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
        if seq % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:5]


def wait_until_stable(bootstrap: str, topic: str, partition: int, timeout: float = 20.0) -> None:
    """Wait until the partition's last stable offset reaches its high watermark. commit_transaction returns once
    the coordinator has logged PrepareCommit; the markers that move the LSO are written after, so a reader
    started at once may stop short of the last transaction. Only for partitions with no transaction left open."""
    from pykafka_client import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, partition)
    with KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as committed, \
            KafkaConsumer({"bootstrap.servers": bootstrap}) as uncommitted:
        deadline = time.monotonic() + timeout
        while True:
            lso = committed.end_offsets([tp], timeout=10)[tp]
            hw = uncommitted.end_offsets([tp], timeout=10)[tp]
            if lso == hw:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{tp}: the last stable offset stayed at {lso}, below the high watermark {hw}")
            time.sleep(0.05)


def read_partition_confluent(bootstrap: str, topic: str, partition: int, isolation: str,
                             timeout: float = 60.0) -> list[bytes]:
    """Every record value of one partition visible under ``isolation``, from the beginning to the end offset
    (the LSO under read_committed, once it has reached the high watermark)."""
    if isolation == "read_committed":
        wait_until_stable(bootstrap, topic, partition)
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}", "enable.auto.commit": False,
                     "isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([ck.TopicPartition(topic, partition, ck.OFFSET_BEGINNING)])
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"reading {topic}-{partition}: {m.error()}")
            out.append(m.value())
        raise AssertionError(f"reading {topic}-{partition} ({isolation}) did not reach the end in {timeout} s")
    finally:
        c.close()


def read_partition_ours(bootstrap: str, topic: str, partition: int, isolation: str,
                        timeout: float = 60.0, settle: bool = True) -> list[bytes]:
    """The same with our KafkaConsumer: reads up to ``end_offsets`` (which is the LSO under read_committed;
    positions move past the commit markers, so the end is reached although markers are never returned).
    ``settle=False``: do not wait for the LSO to reach the high watermark (a transaction is known to be open)."""
    from pykafka_client import KafkaConsumer, TopicPartition

    if isolation == "read_committed" and settle:
        wait_until_stable(bootstrap, topic, partition)

    tp = TopicPartition(topic, partition)
    with KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                        "enable.auto.commit": False}) as c:
        c.assign([tp])
        c.seek_to_beginning([tp])
        end = c.end_offsets([tp], timeout=20)[tp]
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while c.position(tp, timeout=20) < end:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {tp} ({isolation}) stuck at {c.position(tp)} of {end}")
            for record in c.poll(0.5):
                out.append(record.value)
        return out


Reader = Callable[[str, str, int, str], list[bytes]]
READERS: dict[str, Reader] = {"ours": read_partition_ours, "confluent": read_partition_confluent}


class TxnProducer:
    """A transactional producer of ours or of confluent-kafka behind one small interface, so one test body
    checks the broker (and our consumer) with either, and is proven on noida-db with confluent-kafka."""

    def __init__(self, client: str, bootstrap: str, transactional_id: str, **conf: object) -> None:
        self.client = client
        config: dict[str, object] = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                                     "linger.ms": 5, **conf}
        if client == "ours":
            from pykafka_client import KafkaProducer

            self.impl: Any = KafkaProducer(config)
        else:
            self.impl = ck.Producer(config)

    def init(self, timeout: float = 20.0) -> None:
        self.impl.init_transactions(timeout)

    def begin(self) -> None:
        self.impl.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        if self.client == "ours":
            self.impl.send(topic, value, partition=partition)
        else:
            self.impl.produce(topic, value, partition=partition)

    def flush(self, timeout: float = 20.0) -> None:
        remaining = self.impl.flush(timeout)
        assert not remaining, f"{remaining} records not delivered"

    def commit(self, timeout: float = 20.0) -> None:
        self.impl.commit_transaction(timeout)

    def abort(self, timeout: float = 20.0) -> None:
        self.impl.abort_transaction(timeout)

    def close(self) -> None:
        if self.client == "ours":
            self.impl.close(5)
        else:
            self.impl.flush(5)
