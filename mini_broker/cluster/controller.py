"""The controller process role: serves :class:`ControllerState` over :mod:`controller_rpc` and fences brokers
whose sessions expire (Kafka: the active ``QuorumController``; here a single controller, see
docs/ARCHITECTURE.md "Cluster and replication").

The image is persisted to ``<dir>/metadata.json`` (atomic rewrite on every change) and reloaded on start, so
a restarted controller keeps topics, assignments, ISRs and epochs.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from typing import Any

from mini_broker.cluster.controller_rpc import encode
from mini_broker.cluster.controller_state import ControllerState, error_of
from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.errors_base import KafkaError
from pykafka_client.utils.time import SYSTEM_TIME, Time

log = logging.getLogger(__name__)

IMAGE_FILE = "metadata.json"
#: how long a topic change waits for every broker to apply it before answering anyway
PROPAGATION_TIMEOUT_S = 5.0
_TOPIC_OPS = frozenset({"create_topic", "delete_topic", "create_partitions", "alter_configs"})


class Controller:
    def __init__(self, data_dir: str, cluster_id: str, session_timeout_ms: int = 9000,
                 unclean_leader_election: bool = False, host: str = "127.0.0.1", port: int = 0,
                 time: Time = SYSTEM_TIME) -> None:
        os.makedirs(data_dir, exist_ok=True)
        self.path = os.path.join(data_dir, IMAGE_FILE)
        image: dict[str, Any] | None = None
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as fh:
                image = json.load(fh)
            cluster_id = str(image.get("cluster_id", cluster_id))
        self.state = ControllerState(cluster_id, time, session_timeout_ms, unclean_leader_election,
                                     persist=self._write, image=image)
        self._server = socket.create_server((host, port))
        self.host = host
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._conns_lock = threading.Lock()

    def _write(self, image: dict[str, Any]) -> None:
        atomic_write(self.path, json.dumps(image, sort_keys=True).encode())

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
                try:
                    reply = self.handle(json.loads(line))
                except KafkaError as e:
                    reply = error_of(e)
                except (KeyError, TypeError, ValueError) as e:
                    reply = {"error": 42, "message": f"bad controller request: {e!r}"}
                conn.sendall(encode(reply))
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
    image = s.image()
    if not s.wait_for_propagation(int(image["version"]), int(req.get("broker_id", -1)), PROPAGATION_TIMEOUT_S):
        log.warning("event=metadata_propagation_slow op=%s msg=\"answering before every broker applied the "
                    "change; clients retry unknown topics\"", op)
    return {"image": image}


def handle_request(s: ControllerState, req: dict[str, Any]) -> dict[str, Any]:
    """One controller request -> its reply (raises KafkaError)."""
    op = req["op"]
    if op == "register":
        listeners = [{"name": str(ep["name"]), "host": str(ep["host"]), "port": int(ep["port"]),
                      "security_protocol": str(ep.get("security_protocol", ep["name"]))}
                     for ep in req.get("listeners", [])]
        epoch = s.register_broker(int(req["broker_id"]), str(req["host"]), int(req["port"]), listeners)
        log.info("event=broker_registered broker_id=%s broker_epoch=%d", req["broker_id"], epoch)
        return {"broker_epoch": epoch, "image": s.image()}
    if op == "heartbeat":
        s.heartbeat(int(req["broker_id"]), int(req["broker_epoch"]), int(req.get("version", -1)))
        return {"image": s.image()} if s.version != int(req.get("version", -1)) else {}
    if op == "alter_acls":
        s.alter_acls([dict(a) for a in req.get("create", [])], [dict(a) for a in req.get("delete", [])])
        return _when_propagated(s, req, op)
    if op == "alter_scram_credentials":
        s.alter_scram_credentials([dict(c) for c in req.get("upsert", [])], [dict(c) for c in req.get("delete", [])])
        return _when_propagated(s, req, op)
    if op in _TOPIC_OPS:
        if op == "create_topic":
            s.create_topic(str(req["name"]), int(req["num_partitions"]), int(req["replication_factor"]),
                           dict(req.get("configs", {})), bool(req.get("validate_only", False)))
        elif op == "delete_topic":
            s.delete_topic(str(req["name"]))
        elif op == "create_partitions":
            s.create_partitions(str(req["name"]), int(req["count"]), bool(req.get("validate_only", False)))
        else:
            s.alter_configs(str(req["name"]), dict(req["configs"]))
        return _when_propagated(s, req, op)
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
    return {"image": s.image()}
