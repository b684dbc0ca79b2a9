"""One replicated partition as this broker sees it (Kafka: ``kafka.cluster.Partition``), sans-IO.

The registration (replicas, ISR, leader, leader epoch, partition epoch) comes from the controller's image.
As leader it tracks each follower's log end offset and when the follower was last caught up
(``last_caught_up_ms``: the follower's fetch reached the leader's log end, or the log end the leader had at
the follower's previous fetch), and from that decides:

* :meth:`high_watermark` = the minimum log end offset of the *maximal* ISR (the ISR plus a pending
  expansion, as Kafka's ``PartitionState.maximalIsr``), never lower than the current one;
* :meth:`isr_to_expand`: a follower not in the ISR whose log end reached the high watermark and the start
  of the leader's epoch joins it;
* :meth:`isr_to_shrink`: a follower that has not caught up for ``replica.lag.time.max.ms`` leaves it;
* :meth:`low_watermark`: the smallest log start offset of the ISR, which a DeleteRecords waits for.

ISR changes are proposals: the broker sends them to the controller (AlterPartition) and sets the ISR when
the controller's image carries it; one proposal at a time (:attr:`pending_isr`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

NO_LEADER = -1


@dataclass
class ReplicaState:
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0
    log_start_offset: int = -1


@dataclass
class Partition:
    topic: str
    partition: int
    local_id: int
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    leader: int = NO_LEADER
    leader_epoch: int = -1
    partition_epoch: int = -1
    #: the log end offset when this broker became leader of this epoch (a follower joins the ISR only past it)
    leader_epoch_start_offset: int = 0
    followers: dict[int, ReplicaState] = field(default_factory=dict)
    pending_isr: list[int] | None = None

    @property
    def is_leader(self) -> bool:
        return self.leader == self.local_id

    def update_registration(self, replicas: list[int], isr: list[int], leader: int, leader_epoch: int,
                            partition_epoch: int, log_end_offset: int, now_ms: int) -> str:
        """Apply the controller's registration; returns "leader" / "follower" when this broker's role or the
        leader epoch changed (the caller then makes the log leader / follower), else "" (ISR-only change)."""
        changed_epoch = leader_epoch != self.leader_epoch or leader != self.leader
        self.replicas, self.isr = list(replicas), list(isr)
        self.partition_epoch = partition_epoch
        if self.pending_isr is not None and (self.pending_isr == self.isr or changed_epoch):
            self.pending_isr = None
        if not changed_epoch:
            if self.is_leader:  # a reassignment adds or drops followers within the epoch
                self.followers = {r: self.followers.get(r) or ReplicaState(last_caught_up_ms=now_ms)
                                  for r in replicas if r != self.local_id}
            return ""
        self.leader, self.leader_epoch = leader, leader_epoch
        self.pending_isr = None
        if leader == self.local_id:
            self.leader_epoch_start_offset = log_end_offset
            # followers start "caught up now" (Kafka resets replica states this way on becoming leader)
            self.followers = {r: ReplicaState(last_caught_up_ms=now_ms) for r in replicas if r != self.local_id}
            return "leader"
        self.followers = {}
        return "follower"

    # --- leader side -------------------------------------------------------------------------------

    def update_follower_fetch(self, replica_id: int, fetch_offset: int, leader_leo: int, now_ms: int,
                              log_start_offset: int = -1) -> bool:
        """A follower fetched from ``fetch_offset`` (= its log end) while the leader's log end was ``leader_leo``,
        reporting its log start offset; True when that log start moved (a DeleteRecords may complete)."""
        st = self.followers.get(replica_id)
        if st is None:
            return False
        moved = log_start_offset != st.log_start_offset
        st.log_start_offset = log_start_offset
        if fetch_offset >= leader_leo:
            st.last_caught_up_ms = now_ms
        elif fetch_offset >= st.last_fetch_leader_leo >= 0:
            st.last_caught_up_ms = max(st.last_caught_up_ms, st.last_fetch_ms)
        st.log_end_offset = fetch_offset
        st.last_fetch_leader_leo = leader_leo
        st.last_fetch_ms = now_ms
        return moved

    def maximal_isr(self) -> list[int]:
        if self.pending_isr is None:
            return self.isr
        return sorted(set(self.isr) | set(self.pending_isr))

    def high_watermark(self, leader_leo: int, current_hw: int) -> int:
        """The high watermark the ISR allows (never below ``current_hw``)."""
        hw = leader_leo
        for r in self.maximal_isr():
            if r == self.local_id:
                continue
            st = self.followers.get(r)
            if st is None or st.log_end_offset < 0:
                return current_hw
            hw = min(hw, st.log_end_offset)
        return max(hw, current_hw)

    def low_watermark(self, leader_log_start: int) -> int:
        """The smallest log start offset of the leader and the (maximal) ISR's followers; -1 while a follower
        has not reported one since this broker became leader (Kafka ``Partition.lowWatermarkIfLeader``)."""
        low = leader_log_start
        for r in self.maximal_isr():
            if r == self.local_id:
                continue
            st = self.followers.get(r)
            if st is None or st.log_start_offset < 0:
                return -1
            low = min(low, st.log_start_offset)
        return low

    def isr_to_expand(self, replica_id: int, high_watermark: int) -> list[int] | None:
        """The ISR with ``replica_id`` added, when it caught up (else None)."""
        if not self.is_leader or self.pending_isr is not None or replica_id in self.isr:
            return None
        st = self.followers.get(replica_id)
        if st is None or replica_id not in self.replicas:
            return None
        if st.log_end_offset >= high_watermark and st.log_end_offset >= self.leader_epoch_start_offset:
            return [r for r in self.replicas if r in self.isr or r == replica_id]
        return None

    def isr_to_shrink(self, now_ms: int, lag_time_max_ms: int) -> list[int] | None:
        """The ISR without the followers that have not caught up for ``lag_time_max_ms`` (else None)."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        out = [r for r in self.isr if r != self.local_id
               and now_ms - self.followers.get(r, ReplicaState()).last_caught_up_ms > lag_time_max_ms]
        if not out:
            return None
        return [r for r in self.isr if r not in out]
