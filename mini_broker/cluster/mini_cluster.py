"""``MiniCluster``: a controller plus N mini_broker processes on loopback, for tests, benchmarks and the CLI
(``mini-broker --cluster N --data-dir DIR``).

Usage::

    with MiniCluster(3, data_dir=None, overrides={"min.insync.replicas": "2"}) as cluster:
        cluster.bootstrap_servers            # "127.0.0.1:p0,127.0.0.1:p1,127.0.0.1:p2"
        cluster.create_topic("t", partitions=3, replication_factor=3)   # waits for leaders and full ISRs
        leader = cluster.leader("t", 0)      # broker id (0..N-1), from the controller
        cluster.kill(leader)                 # SIGKILL that broker's process
        cluster.wait_for_leader("t", 0, not_in={leader})
        cluster.restart(leader)              # same port, same data directory; waits until registered
        cluster.wait_for_isr("t", 0, 3, timeout=30)

API (stable; the client-side failover tests build on it):

* ``MiniCluster(num_brokers=3, *, data_dir=None, overrides=None, log_level="WARNING")``: ``data_dir`` (else a
  temp dir removed on exit) holds ``controller/`` and ``broker-<id>/``; ``overrides`` are broker properties
  (``broker.session.timeout.ms``, ``unclean.leader.election.enable``, ``auto.leader.rebalance.enable``,
  ``leader.imbalance.check.interval.seconds`` and ``leader.imbalance.per.broker.percentage`` also configure the
  controller).
  Defaults for tests: ``default.replication.factor=min(3, N)``, ``broker.heartbeat.interval.ms=200``,
  ``broker.session.timeout.ms=2000``, ``replica.lag.time.max.ms=5000``.
* ``start()`` / ``shutdown()`` (or the context manager); ``bootstrap_servers``; ``brokers`` (id ->
  :class:`BrokerProcess`, with ``.port``, ``.pid``, ``.alive``, ``.output``); ``controller``
  (:class:`~mini_broker.cluster.controller.Controller`, in this process).
* ``kill(broker_id)`` (SIGKILL), ``stop(broker_id)`` (SIGTERM, clean), ``restart(broker_id)``;
  ``leader(topic, partition)``, ``isr(topic, partition)``, ``leader_epoch(topic, partition)``;
  ``replicas(topic, partition)``, ``topic_id(topic)`` (all read under the controller's lock);
  ``wait_for_leader(topic, partition, not_in=(), timeout=30)``, ``wait_for_isr(topic, partition, n, timeout=30)``
  (both return once every live broker also applied the version carrying that leader / ISR),
  ``wait_for_metadata(timeout=30)`` (every live broker applied the controller's current image);
  ``restore()`` (start every broker that is down: between the tests sharing a cluster);
  ``create_topic(name, partitions=1, replication_factor=None, configs=None)``.

The controller runs in the process that owns the ``MiniCluster`` (threads): killing a broker is a broker
failure, never a controller failure.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType

from mini_broker.cluster.controller import Controller
from mini_broker.cluster.controller_state import (
    NO_LEADER,
    BrokerRegistration,
    LeaderBalanceConfig,
    PartitionRegistration,
)
from pykafka_client.errors import KafkaTimeoutError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LISTENING = re.compile(r"mini_broker listening on PLAINTEXT://([\d.]+):(\d+)")

DEFAULT_OVERRIDES: dict[str, str] = {
    "broker.heartbeat.interval.ms": "200",
    "broker.session.timeout.ms": "2000",
    "replica.lag.time.max.ms": "5000",
    "num.io.threads": "2",
    "num.network.threads": "1",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BrokerStartError(RuntimeError):
    """A broker process exited (or never listened) instead of starting; ``port_in_use`` when its port was taken
    between :func:`_free_port` choosing it and the broker binding it."""

    def __init__(self, message: str, port_in_use: bool) -> None:
        super().__init__(message)
        self.port_in_use = port_in_use


class BrokerProcess:
    """One broker of the cluster in its own ``python -m mini_broker`` process."""

    def __init__(self, broker_id: int, data_dir: str, port: int, props: Mapping[str, str], log_level: str,
                 extra_listeners: str = "") -> None:
        self.broker_id = broker_id
        self.extra_listeners = extra_listeners
        self.data_dir = os.path.abspath(data_dir)  # the process's working directory is not the caller's
        self.port = port
        self.props = dict(props)
        self.log_level = log_level
        self.output: list[str] = []
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 60.0) -> None:
        self.spawn()
        self.wait_listening(timeout)

    def spawn(self) -> None:
        """Start the process (returns at once; :meth:`wait_listening` waits for its listener)."""
        args = [sys.executable, "-m", "mini_broker", "--data-dir", self.data_dir, "--listeners",
                f"PLAINTEXT://127.0.0.1:{self.port}" + (f",{self.extra_listeners}" if self.extra_listeners else ""),
                "--log-level", self.log_level]
        for k, v in self.props.items():
            args += ["--override", f"{k}={v}"]
        # --exit-on-stdin-eof: the broker stops when this process dies (its end of the pipe closes), so a killed
        # test run leaves no broker behind
        self.proc = subprocess.Popen([*args, "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=ROOT)

    def wait_listening(self, timeout: float = 60.0) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if LISTENING.search(line):
                threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
                return
        self.proc.kill()
        self.proc.wait()
        tail = "".join(self.output[-50:])
        raise BrokerStartError(f"broker {self.broker_id} did not start:\n" + tail,
                               port_in_use="Address already in use" in tail)

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)
            if len(self.output) > 5000:
                del self.output[:1000]

    def listener_bootstrap(self, listener_name: str) -> str | None:
        """``host:port`` of a named listener as this process last printed it (None before it did)."""
        pattern = re.compile(rf"mini_broker listening on {re.escape(listener_name.upper())}://([\d.]+):(\d+)")
        found = [m for m in map(pattern.search, list(self.output)) if m]
        return f"{found[-1].group(1)}:{found[-1].group(2)}" if found else None

    @property
    def pid(self) -> int:
        return -1 if self.proc is None else self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def terminate(self) -> None:
        """Send SIGTERM (a clean shutdown) without waiting."""
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._close_stdin()


class MiniCluster:
    """See the module docstring."""

    def __init__(self, num_brokers: int = 3, *, data_dir: str | None = None,
                 overrides: Mapping[str, object] | None = None, log_level: str = "WARNING",
                 ports: list[int] | None = None, extra_listeners: str | Sequence[str] = "") -> None:
        if num_brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.num_brokers = num_brokers
        self._owns_dir = data_dir is None
        # absolute: the broker processes run with the package's root as their working directory
        self.data_dir = os.path.abspath(data_dir) if data_dir else tempfile.mkdtemp(prefix="mini_cluster-")
        props = dict(DEFAULT_OVERRIDES)
        props["default.replication.factor"] = str(min(3, num_brokers))
        props.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (overrides or {}).items()})
        self.props = props
        self.log_level = log_level
        self.cluster_id = "mini-cluster-" + os.path.basename(os.path.normpath(self.data_dir))[-12:].replace("_", "-")
        self._ports = ports
        #: listeners each broker has besides its PLAINTEXT one (e.g. ``SASL_PLAINTEXT://127.0.0.1:0``); a sequence
        #: gives each broker its own (index: broker id), e.g. fixed ports
        self.extra_listeners = extra_listeners
        self.controller: Controller | None = None
        self.brokers: dict[int, BrokerProcess] = {}

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> MiniCluster:
        self.controller = Controller(
            os.path.join(self.data_dir, "controller"), self.cluster_id,
            session_timeout_ms=int(self.props["broker.session.timeout.ms"]),
            unclean_leader_election=self.props.get("unclean.leader.election.enable", "false").lower() == "true",
            leader_balance=LeaderBalanceConfig(
                self.props.get("auto.leader.rebalance.enable", "true").lower() == "true",
                int(self.props.get("leader.imbalance.check.interval.seconds", "300")) * 1000,
                int(self.props.get("leader.imbalance.per.broker.percentage", "10"))),
        ).start()
        try:
            for i in range(self.num_brokers):
                port = self._ports[i] if self._ports else _free_port()
                props = dict(self.props)
                props.update({"node.id": str(i), "controller.quorum.bootstrap.servers": self.controller.address,
                              "cluster.id": self.controller.state.cluster_id})
                b = BrokerProcess(i, os.path.join(self.data_dir, f"broker-{i}"), port, props, self.log_level,
                                  self.extra_listeners if isinstance(self.extra_listeners, str)
                                  else self.extra_listeners[i])
                self.brokers[i] = b
                b.spawn()  # all at once: the interpreters start in parallel
            for b in self.brokers.values():
                self._wait_listening(b)
            self._wait(lambda: all(not r.fenced for r in self._registered()) and len(self._registered()) == len(self.brokers),
                       60, "every broker to register")
            self.wait_for_metadata()
        except BaseException:
            self.shutdown()
            raise
        return self

    def _wait_listening(self, b: BrokerProcess, attempts: int = 3) -> None:
        """Wait for ``b`` to listen; a port another process took since it was chosen is replaced by a fresh
        one (only for ports this cluster chose itself: a port the caller gave is reported)."""
        for attempt in range(attempts):
            try:
                b.wait_listening()
                return
            except BrokerStartError as e:
                if not e.port_in_use or self._ports or attempt == attempts - 1:
                    raise
                b.port = _free_port()
                b.spawn()

    def wait_for_metadata(self, timeout: float = 30.0) -> None:
        """Wait until every live broker has applied the controller's current image (it says so in its next
        heartbeat), so that any broker's Metadata answer shows what the controller knows now."""
        assert self.controller is not None
        state = self.controller.state
        version = state.current_version()

        def applied() -> bool:
            return all(b.metadata_version >= version for b in state.broker_registrations().values() if not b.fenced)

        self._wait(applied, timeout, f"every broker to apply metadata version {version}")

    def _start_broker(self, b: BrokerProcess, timeout: float = 60.0) -> None:
        assert self.controller is not None
        before = self.controller.state.broker_registrations().get(b.broker_id)
        old_epoch = before.broker_epoch if before is not None else -1
        b.start(timeout)

        def registered() -> bool:
            assert self.controller is not None
            reg = self.controller.state.broker_registrations().get(b.broker_id)
            return reg is not None and not reg.fenced and reg.broker_epoch > old_epoch

        self._wait(registered, timeout, f"broker {b.broker_id} to register")

    def _registered(self) -> list[BrokerRegistration]:
        assert self.controller is not None
        return [r for i, r in self.controller.state.broker_registrations().items() if i in self.brokers]

    def shutdown(self) -> None:
        for b in self.brokers.values():
            b.terminate()  # all at once, then wait for each
        for b in self.brokers.values():
            b.stop()
        if self.controller is not None:
            self.controller.shutdown()
            self.controller = None
        if self._owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> MiniCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.shutdown()

    # --- brokers -----------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def listener_bootstrap(self, broker_id: int, listener_name: str, timeout: float = 30.0) -> str:
        """``host:port`` of one of a broker's further listeners (``extra_listeners``), once its process printed
        it; RuntimeError naming the listener when it did not within ``timeout`` seconds."""
        b = self.brokers[broker_id]
        deadline = time.monotonic() + timeout
        while True:
            found = b.listener_bootstrap(listener_name)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker {broker_id} printed no {listener_name} listener within {timeout} s; "
                                   f"is it among the cluster's extra_listeners ({self.extra_listeners!r})?")
            time.sleep(0.05)

    def kill(self, broker_id: int) -> None:
        """SIGKILL the broker's process (no clean shutdown; the controller fences it after the session timeout)."""
        self.brokers[broker_id].kill()

    def stop(self, broker_id: int) -> None:
        """SIGTERM: a clean shutdown of that broker."""
        self.brokers[broker_id].stop()

    def restart(self, broker_id: int, timeout: float = 60.0) -> None:
        """Start a stopped or killed broker again (same id, port and data directory); returns once registered."""
        b = self.brokers[broker_id]
        if b.alive:
            b.kill()
        self._start_broker(b, timeout)
        self.wait_for_metadata(timeout)

    def restore(self, timeout: float = 60.0) -> list[int]:
        """Start again every broker that is not running (a test that failed half-way may leave one killed or
        stopped); returns their ids. A cluster shared by several tests calls it between them, so one failure
        does not fail the tests after it."""
        down = [i for i, b in self.brokers.items() if not b.alive]
        for i in down:
            self._start_broker(self.brokers[i], timeout)
        if down:
            self.wait_for_metadata(timeout)
        return down

    # --- partition state (from the controller) -----------------------------------------------------

    def _registration(self, topic: str, partition: int) -> PartitionRegistration | None:
        assert self.controller is not None
        # read under the controller's lock: a registration changed by an election in progress is never seen
        # before the version that carries it (wait_for_metadata would then wait for the version before)
        return self.controller.state.partition_registration(topic, partition)

    def leader(self, topic: str, partition: int) -> int:
        reg = self._registration(topic, partition)
        return NO_LEADER if reg is None else reg.leader

    def leader_epoch(self, topic: str, partition: int) -> int:
        reg = self._registration(topic, partition)
        return -1 if reg is None else reg.leader_epoch

    def isr(self, topic: str, partition: int) -> list[int]:
        reg = self._registration(topic, partition)
        return [] if reg is None else list(reg.isr)

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The partition's replicas (the preferred one first), from the controller ([] when unknown)."""
        reg = self._registration(topic, partition)
        return [] if reg is None else list(reg.replicas)

    def topic_id(self, topic: str) -> str | None:
        """The topic's id as the controller assigned it (None when there is no such topic)."""
        assert self.controller is not None
        t = self.controller.state.topic_registration(topic)
        return None if t is None else t.topic_id

    def wait_for_leader(self, topic: str, partition: int, not_in: Iterable[int] = (), timeout: float = 30.0) -> int:
        """Wait until the controller names a leader not in ``not_in`` and every live broker applied the metadata
        version carrying it (so the leader answers as leader and the others name it); returns that leader. The
        leader may change again afterwards (another failover, a preferred election)."""
        leader = self._wait_for_leader_elected(topic, partition, set(not_in), timeout)
        self.wait_for_metadata(timeout)
        return leader

    def _wait_for_leader_elected(self, topic: str, partition: int, excluded: set[int], timeout: float) -> int:
        found: list[int] = []

        def ok() -> bool:
            leader = self.leader(topic, partition)
            found[:] = [leader]
            return leader != NO_LEADER and leader not in excluded

        self._wait(ok, timeout, f"a leader of {topic}-{partition} not in {sorted(excluded)}")
        return found[0]

    def wait_for_isr(self, topic: str, partition: int, n: int, timeout: float = 30.0) -> list[int]:
        """Wait until the controller's ISR of the partition has at least ``n`` replicas and every live broker
        applied the metadata version carrying it (the leader counts them for acks=all and
        min.insync.replicas); returns that ISR."""
        found: list[list[int]] = []

        def ok() -> bool:
            found[:] = [self.isr(topic, partition)]
            return len(found[0]) >= n

        self._wait(ok, timeout, f"{n} in-sync replicas of {topic}-{partition}")
        self.wait_for_metadata(timeout)
        return found[0]

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
        """Create through the controller and wait until every partition has a leader that serves it."""
        assert self.controller is not None
        rf = replication_factor if replication_factor is not None else int(self.props["default.replication.factor"])
        self.controller.state.create_topic(name, partitions, rf, dict(configs or {}))
        for p in range(partitions):
            self._wait_for_leader_elected(name, p, set(), timeout)
        self.wait_for_metadata(timeout)  # brokers pick the topic up from their next heartbeat

    @staticmethod
    def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.05)
        raise KafkaTimeoutError(f"timed out after {timeout}s waiting for {what}")
