"""The controller process role: serves :class:`ControllerState` over :mod:`controller_rpc`, fences brokers
whose sessions expire and moves leadership back to the preferred replicas (Kafka: the active ``QuorumController``; here a single controller, see
docs/ARCHITECTURE.md "Cluster and replication").

The image is persisted as a metadata log (:class:`MetadataLog`): each change appends its delta (the entries it
touched) to ``<dir>/metadata.log``, and every :data:`SNAPSHOT_EVERY` deltas the whole image is written to
``<dir>/metadata.json`` (atomically) and the log starts over; a restart loads the snapshot and replays the log,
so a restarted controller keeps topics, assignments, ISRs and epochs, and a change costs what it changed.

Brokers learn of changes by long-polling (``fetch_metadata``): the request names the version the broker applied
and is answered as soon as a newer one is published (or after ``max_wait_ms`` with nothing), with the deltas
after that version (Kafka: a broker fetching the metadata log from its offset), or with the whole image when the
broker just started or is further behind than the deltas the controller keeps (Kafka: it fetches the latest
snapshot). Every other reply that brings a broker up to date (registration, forwarded changes, AlterPartition)
does the same from the version its request names, so a change costs the brokers what it changed, not the
image's size. A long-poll rather than a push keeps every connection broker-initiated (the broker already
connects, reconnects and registers; the controller needs no address book nor client connections to brokers,
as KRaft brokers fetch the metadata log from the controller), and the request doubles as the broker's
acknowledgement of what it applied, which is what topic changes wait for before they are answered.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from mini_broker.cluster.controller_rpc import encode
from mini_broker.cluster.controller_state import ControllerState, LeaderBalanceConfig, TopicSpec, error_of
from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)

IMAGE_FILE = "metadata.json"
LOG_FILE = "metadata.log"
#: deltas appended before the image is snapshotted and the log restarted
SNAPSHOT_EVERY = 1000
#: the longest a broker's metadata fetch waits for a change
FETCH_MAX_WAIT_MS = 1000
#: how long a topic change waits for every broker to apply it before answering anyway
PROPAGATION_TIMEOUT_S = 5.0
_TOPIC_OPS = frozenset({"create_topic", "delete_topic", "create_partitions", "alter_configs"})


class MetadataLog:
    """The controller's persisted image: a snapshot (``metadata.json``) plus the deltas after it, one JSON line
    each (``metadata.log``, fsynced per append). A torn last line (a crash mid-append) is cut off at load: that
    change was never acknowledged, and the next append starts a line of its own."""

    def __init__(self, data_dir: str) -> None:
        self.snapshot_path = os.path.join(data_dir, IMAGE_FILE)
        self.log_path = os.path.join(data_dir, LOG_FILE)
        self._appended = 0
        self._fh: Any = None

    def load(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """(the snapshot or None, the deltas logged after it)."""
        snapshot: dict[str, Any] | None = None
        if os.path.exists(self.snapshot_path):
            with open(self.snapshot_path, encoding="utf-8") as fh:
                snapshot = json.load(fh)
        deltas: list[dict[str, Any]] = []
        if os.path.exists(self.log_path):
            good_end = 0
            with open(self.log_path, "rb") as fh:
                for line in fh:
                    try:
                        if not line.endswith(b"\n"):
                            raise ValueError("no line end")
                        deltas.append(json.loads(line))
                    except ValueError:
                        log.warning("event=metadata_log_torn_record path=%s msg=\"dropping a partly written last "
                                    "record (a crash while appending it)\"", self.log_path)
                        break
                    good_end += len(line)
            if good_end < os.path.getsize(self.log_path):
                # cut the torn tail, so that the next append starts a line of its own (else it would be glued to
                # the torn bytes and lost, with every change after it, at the next load)
                with open(self.log_path, "r+b") as fh:
                    fh.truncate(good_end)
                    os.fsync(fh.fileno())
        self._appended = len(deltas)
        return snapshot, deltas

    def append(self, delta: dict[str, Any], state: ControllerState) -> None:
        if self._appended >= SNAPSHOT_EVERY:
            self.snapshot(state)
        if self._fh is None:
            self._fh = open(self.log_path, "ab")  # kept open for the controller's lifetime
        self._fh.write(json.dumps(delta, sort_keys=True, separators=(",", ":")).encode() + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._appended += 1

    def snapshot(self, state: ControllerState) -> None:
        """Write the whole image and start the log over (a crash in between replays deltas the snapshot
        already has, which :meth:`ControllerState.replay` skips by version)."""
        atomic_write(self.snapshot_path, json.dumps(state.image(), sort_keys=True).encode())
        self.close()
        with open(self.log_path, "wb") as fh:
            os.fsync(fh.fileno())
        self._appended = 0

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Controller:
    def __init__(self, data_dir: str, cluster_id: str, session_timeout_ms: int = 9000,
                 unclean_leader_election: bool = False, host: str = "127.0.0.1", port: int = 0,
                 time: Time = SYSTEM_TIME, leader_balance: LeaderBalanceConfig | None = None) -> None:
        os.makedirs(data_dir, exist_ok=True)
        self.metadata_log = MetadataLog(data_dir)
        image, deltas = self.metadata_log.load()
        if image is not None:
            cluster_id = str(image.get("cluster_id", cluster_id))
        self.state = ControllerState(cluster_id, time, session_timeout_ms, unclean_leader_election,
                                     persist=self._write, image=image, leader_balance=leader_balance)
        for delta in deltas:
            self.state.replay(delta)
        self._server = socket.create_server((host, port))
        self.host = host
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._conns_lock = threading.Lock()
        #: bytes of replies sent, per request op (what metadata propagation costs; the benchmark reads it)
        self.reply_bytes: dict[str, int] = {}
        self._reply_bytes_lock = threading.Lock()

    def _write(self, delta: dict[str, Any]) -> None:
        self.metadata_log.append(delta, self.state)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Controller:
        for target, name in ((self._accept_loop, "controller-acceptor"), (self._session_loop, "controller-sessions")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        log.info("event=controller_started address=%s", self.address)
        return self

    def shutdown(self) -> None:
        self._stop.set()
        with self.state.lock:
            self.metadata_log.close()
        try:
            self._server.close()
        except OSError:
            pass
        with self._conns_lock:
            for c in self._conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                    c.close()
                except OSError:
                    pass

    def _session_loop(self) -> None:
        interval = max(0.02, self.state.session_timeout_ms / 20000)
        while not self._stop.wait(interval):
            fenced = self.state.check_sessions()
            for b in fenced:
                log.warning("event=broker_fenced broker_id=%d msg=\"no heartbeat within broker.session.timeout.ms; "
                            "its partitions get new leaders from their ISR\"", b)
            try:
                elected = self.state.maybe_balance_partition_leaders()
            except KafkaError as e:  # e.g. the metadata log could not be written: the next check tries again
                log.warning("event=leader_balance_failed error=%r", e)
                continue
            if elected:
                log.info("event=preferred_leaders_elected partitions=%d msg=\"leadership back on the preferred "
                         "replicas (auto.leader.rebalance.enable)\"", len(elected))

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._conns_lock:
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="controller-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        f = conn.makefile("rb")
        try:
            for line in f:
                op = "?"
                try:
                    req = json.loads(line)
                    op = str(req.get("op"))
                    reply = self.handle(req)
                except KafkaError as e:
                    reply = error_of(e)
                except (KeyError, TypeError, ValueError, AttributeError) as e:
                    reply = {"error": 42, "message": f"bad controller request: {e!r}"}
                data = encode(reply)
                with self._reply_bytes_lock:
                    self.reply_bytes[op] = self.reply_bytes.get(op, 0) + len(data)
                conn.sendall(data)
        except OSError:
            pass
        finally:
            with self._conns_lock:
                if conn in self._conns:
                    self._conns.remove(conn)
            conn.close()

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        return handle_request(self.state, req)


def _when_propagated(s: ControllerState, req: dict[str, Any], op: str) -> dict[str, Any]:
    """The reply to a forwarded change, once every other broker applied it (or after PROPAGATION_TIMEOUT_S)."""
    if not s.wait_for_propagation(s.version, int(req.get("broker_id", -1)), PROPAGATION_TIMEOUT_S):
        log.warning("event=metadata_propagation_slow op=%s msg=\"answering before every broker applied the "
                    "change; clients retry unknown topics\"", op)
    return _changes_for(s, req)


def _changes_for(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    """What brings the requesting broker (at the ``version`` its request names) up to date."""
    return s.changes_since(int(req.get("version", -1)))


def _error_or_none(e: KafkaError | None) -> dict[str, Any] | None:
    return None if e is None else error_of(e)


def _create_topics(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    specs = [TopicSpec(str(t["name"]), int(t.get("num_partitions", -1)), int(t.get("replication_factor", -1)),
                       dict(t.get("configs", {})),
                       [[int(r) for r in a] for a in t["assignment"]] if t.get("assignment") else None)
             for t in req["topics"]]
    out = s.create_topics(specs, bool(req.get("validate_only", False)))
    return {name: error_of(r) if isinstance(r, KafkaError) else None for name, r in out.items()}


def _delete_topics(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    return {name: _error_or_none(e) for name, e in s.delete_topics([str(n) for n in req["names"]]).items()}


def _create_partitions_batch(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    asks = [(str(t["name"]), int(t["count"]),
             [[int(r) for r in a] for a in t["assignment"]] if t.get("assignment") else None) for t in req["topics"]]
    out = s.create_partitions_batch(asks, bool(req.get("validate_only", False)))
    return {name: _error_or_none(e) for name, e in out.items()}


def _alter_reassignments(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    moves = [(str(t), int(p), None if r is None else [int(x) for x in r]) for t, p, r in req["moves"]]
    out = s.alter_partition_reassignments(moves)
    return {f"{t}:{p}": _error_or_none(e) for (t, p), e in out.items()}


def _elect_leaders(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    wanted = None if req.get("partitions") is None else [(str(t), int(p)) for t, p in req["partitions"]]
    out = s.elect_leaders(bool(req.get("unclean", False)), wanted)
    return {f"{t}:{p}": _error_or_none(e) for (t, p), e in out.items()}


#: requests changing many entries at once: one change, one propagation; their reply's "results" maps each
#: item to None or its error
_BATCH_OPS: dict[str, Callable[[ControllerState, dict[str, Any]], dict[str, Any]]] = {
    "create_topics": _create_topics,
    "delete_topics": _delete_topics,
    "create_partitions_batch": _create_partitions_batch,
    "alter_reassignments": _alter_reassignments,
    "elect_leaders": _elect_leaders,
}


def _alter_partitions(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    """A leader's queued ISR proposals (Kafka: one AlterPartition request for many partitions): one change for
    all that the controller accepts, and per partition None or why it refused."""
    broker_id, broker_epoch = int(req["broker_id"]), int(req["broker_epoch"])
    results: dict[str, Any] = {}
    with s.batch():
        for p in req["partitions"]:
            topic, partition = str(p["topic"]), int(p["partition"])
            try:
                s.alter_partition(broker_id, broker_epoch, topic, partition, int(p["leader_epoch"]),
                                  int(p["partition_epoch"]), [int(r) for r in p["isr"]])
                results[f"{topic}:{partition}"] = None
            except KafkaError as e:
                results[f"{topic}:{partition}"] = error_of(e)
    return {**_changes_for(s, req), "results": results}


def handle_request(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    """One controller request -> its reply (raises KafkaError)."""
    op = req["op"]
    if op == "register":
        listeners = [{"name": str(ep["name"]), "host": str(ep["host"]), "port": int(ep["port"]),
                      "security_protocol": str(ep.get("security_protocol", ep["name"]))}
                     for ep in req.get("listeners", [])]
        epoch = s.register_broker(int(req["broker_id"]), str(req["host"]), int(req["port"]), listeners)
        log.info("event=broker_registered broker_id=%s broker_epoch=%d", req["broker_id"], epoch)
        if not req.get("with_metadata", True):  # a fenced broker registering again: its metadata thread catches up
            return {"broker_epoch": epoch}
        return {"broker_epoch": epoch, **_changes_for(s, req)}
    if op == "fetch_metadata":
        # a broker's long-poll: it applied ``version``; answer with what follows as soon as there is some
        version = int(req.get("version", -1))
        s.report_applied(int(req["broker_id"]), int(req["broker_epoch"]), version)
        wait_ms = min(int(req.get("max_wait_ms", FETCH_MAX_WAIT_MS)), FETCH_MAX_WAIT_MS)
        return _changes_for(s, req) if s.wait_for_version(version, wait_ms / 1000) else {}
    if op == "heartbeat":
        s.heartbeat_arrived(int(req["broker_id"]), int(req["broker_epoch"]))
        s.heartbeat(int(req["broker_id"]), int(req["broker_epoch"]), int(req.get("version", -1)))
        # a broker that long-polls its metadata (fetch_metadata) asks for none here: its heartbeats stay light
        wants_changes = bool(req.get("with_image", True))
        return _changes_for(s, req) if wants_changes and s.version != int(req.get("version", -1)) else {}
    if op == "alter_acls":
        s.alter_acls([dict(a) for a in req.get("create", [])], [dict(a) for a in req.get("delete", [])])
        return _when_propagated(s, req, op)
    if op == "alter_scram_credentials":
        s.alter_scram_credentials([dict(c) for c in req.get("upsert", [])], [dict(c) for c in req.get("delete", [])])
        return _when_propagated(s, req, op)
    if op in _BATCH_OPS:
        results = _BATCH_OPS[op](s, req)
        reply = _when_propagated(s, req, op)
        reply["results"] = results
        return reply
    if op == "list_reassignments":
        wanted = None if req.get("partitions") is None else [(str(t), int(p)) for t, p in req["partitions"]]
        return {"reassignments": [[t, p, reg.replicas, reg.adding_replicas, reg.removing_replicas]
                                  for (t, p), reg in s.list_partition_reassignments(wanted).items()]}
    if op in _TOPIC_OPS:
        if op == "create_topic":
            s.create_topic(str(req["name"]), int(req["num_partitions"]), int(req["replication_factor"]),
                           dict(req.get("configs", {})), bool(req.get("validate_only", False)))
        elif op == "delete_topic":
            s.delete_topic(str(req["name"]))
        elif op == "create_partitions":
            assignment = req.get("assignment")
            s.create_partitions(str(req["name"]), int(req["count"]), bool(req.get("validate_only", False)),
                                [[int(r) for r in a] for a in assignment] if assignment else None)
        else:
            s.alter_configs(str(req["name"]), dict(req["configs"]))
        return _when_propagated(s, req, op)
    elif op == "alter_partitions":
        return _alter_partitions(s, req)
    elif op == "alter_partition":
        s.alter_partition(int(req["broker_id"]), int(req["broker_epoch"]), str(req["topic"]),
                          int(req["partition"]), int(req["leader_epoch"]), int(req["partition_epoch"]),
                          [int(r) for r in req["isr"]])
    elif op == "controlled_shutdown":
        s.controlled_shutdown(int(req["broker_id"]), int(req["broker_epoch"]))
    elif op == "allocate_producer_ids":
        first, count = s.allocate_producer_ids()
        return {"first": first, "count": count}
    else:
        return {"error": 35, "message": f"unknown controller op {op!r}"}
    return _changes_for(s, req)
