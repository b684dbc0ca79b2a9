"""Helpers for the client failover tests: kill the leader's broker while records are in flight, bring it
back, and read a topic back from the beginning."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from mini_broker.cluster.mini_cluster import MiniCluster
from pykafka_client import KafkaConsumer, TopicPartition

#: Generous: a failover on a busy 2-core CI box is the session timeout plus an election plus a metadata
#: refresh, and a restarted broker must catch up before it rejoins the ISR.
FAILOVER_TIMEOUT_S = 60.0


def kill_leader(cluster: MiniCluster, topic: str, partition: int = 0) -> int:
    """SIGKILL the broker leading ``topic``-``partition``; returns its id."""
    victim = cluster.leader(topic, partition)
    assert victim >= 0, f"{topic}-{partition} has no leader to kill"
    cluster.kill(victim)
    return victim


def await_new_leader_and_restart(cluster: MiniCluster, topic: str, partitions: int, victim: int) -> None:
    """Wait until every partition has a leader other than ``victim``, restart it, wait for full ISRs."""
    for p in range(partitions):
        cluster.wait_for_leader(topic, p, not_in={victim}, timeout=FAILOVER_TIMEOUT_S)
    cluster.restart(victim, timeout=FAILOVER_TIMEOUT_S)
    for p in range(partitions):
        cluster.wait_for_isr(topic, p, cluster.num_brokers, timeout=FAILOVER_TIMEOUT_S)


def read_back(cluster: MiniCluster, topic: str, partitions: int, timeout_s: float = 120.0) -> dict[int, list[tuple[int, int]]]:
    """Every record of ``topic`` as ``{partition: [(offset, int(value)), ...]}``, read with our consumer
    (no group) from the beginning up to the end offsets."""
    c: KafkaConsumer[Any, Any] = KafkaConsumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(tps)
        ends = c.end_offsets(tps, timeout=30)
        out: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while any(c.position(tp, timeout=30) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"read back stalled at {[c.position(tp) for tp in tps]} of {ends}"
            for r in c.poll(1.0):
                out[r.partition].append((r.offset, int(r.value)))
        return out
    finally:
        c.close(10)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(0.2)


class TwoLeaderKills:
    """SIGKILLs the broker leading ``topic``-0 when the producer's acknowledged count reaches each threshold
    (reported with :meth:`acked`), then waits for a new leader, restarts the victim and waits for full ISRs,
    on its own thread. A sender calls :meth:`wait_for_kills` to hold back part of its records until a kill
    happened, so that every kill lands with records in flight and more are sent during the failover."""

    def __init__(self, cluster: MiniCluster, topic: str, partitions: int, thresholds: tuple[int, int]) -> None:
        self.cluster, self.topic, self.partitions, self.thresholds = cluster, topic, partitions, thresholds
        self.kills: list[int] = []
        self.error: BaseException | None = None
        self._acked = 0
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True, name="leader-killer")
        self._thread.start()

    def acked(self, n: int = 1) -> None:
        with self._cond:
            self._acked += n
            self._cond.notify_all()

    def wait_for_kills(self, k: int, pump: Callable[[], object] = lambda: None, timeout_s: float = 300) -> None:
        """Until ``k`` kills happened, calling ``pump`` meanwhile (e.g. a producer's poll, which runs the
        delivery callbacks that report the acknowledgements)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._cond:
                if len(self.kills) >= k or self.error is not None:
                    return
                assert time.monotonic() < deadline, f"only {len(self.kills)} of {k} leader kills after {timeout_s}s"
                self._cond.wait(0.05)
            pump()

    def join(self, timeout_s: float = 300) -> None:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the leader killer did not finish"
        if self.error is not None:
            raise self.error
        assert len(self.kills) == len(self.thresholds), f"the leader was killed {len(self.kills)} times"

    def _reached(self, threshold: int) -> bool:
        return self._acked >= threshold

    def _run(self) -> None:
        try:
            for threshold in self.thresholds:
                with self._cond:
                    if not self._cond.wait_for(functools.partial(self._reached, threshold), 300):
                        raise AssertionError(f"{self._acked} records acknowledged, waited for {threshold}")
                victim = kill_leader(self.cluster, self.topic)
                with self._cond:
                    self.kills.append(victim)
                    self._cond.notify_all()
                await_new_leader_and_restart(self.cluster, self.topic, self.partitions, victim)
        except BaseException as e:  # reported by join()
            with self._cond:
                self.error = e
                self._cond.notify_all()
