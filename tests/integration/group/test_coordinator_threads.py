"""The coordinator under concurrent members on real timer threads: several members join, sync, heartbeat,
commit and leave at once for a while; every parked JoinGroup/SyncGroup is answered, nothing deadlocks, and the
group ends Empty after everyone left."""

from __future__ import annotations

import random
import threading
import time

import pytest

from mini_broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupMetadataManager,
    GroupState,
    HeartbeatParams,
    JoinGroupParams,
    JoinGroupResult,
    LeaveGroupParams,
    LeaveMember,
    OffsetCommitParams,
    SyncGroupParams,
    SyncGroupResult,
)
from tests.unit.broker.group.harness import PROTOCOLS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MEMBERS = 6
RUN_S = 2.0
ANSWER_TIMEOUT_S = 10.0


class Waiter:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.result: object = None

    def __call__(self, result: object) -> None:
        self.result = result
        self.event.set()

    def wait(self) -> object:
        assert self.event.wait(ANSWER_TIMEOUT_S), "a parked request was never answered"
        return self.result


def test_concurrent_members_do_not_deadlock() -> None:
    config = GroupConfig(group_min_session_timeout_ms=200, group_initial_rebalance_delay_ms=50)
    coordinator = GroupCoordinator(config, GroupMetadataManager(None), broker_id=0)
    coordinator.startup()
    errors: list[BaseException] = []
    joins = [0]

    def member(seed: int) -> None:
        rng = random.Random(seed)
        member_id = ""
        deadline = time.monotonic() + RUN_S
        try:
            while time.monotonic() < deadline:
                w = Waiter()
                coordinator.handle_join_group(JoinGroupParams(
                    "g", member_id, "consumer", PROTOCOLS, session_timeout_ms=500, rebalance_timeout_ms=1000,
                    require_known_member_id=True, client_id=f"c{seed}", client_host="/h"), w)
                join = w.wait()
                assert isinstance(join, JoinGroupResult)
                joins[0] += 1
                member_id = join.member_id
                if join.error_code != 0:
                    if join.error_code not in (79, 25, 27):  # MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, REBALANCING
                        raise AssertionError(f"unexpected join error {join.error_code}")
                    if join.error_code == 25:
                        member_id = ""
                    continue
                s = Waiter()
                assignment = {m.member_id: b"x" for m in join.members}
                coordinator.handle_sync_group(
                    SyncGroupParams("g", join.generation_id, member_id, assignments=assignment), s)
                assert isinstance(s.wait(), SyncGroupResult)
                for _ in range(rng.randint(1, 4)):
                    coordinator.handle_heartbeat(HeartbeatParams("g", member_id, join.generation_id))
                    coordinator.handle_commit_offsets(OffsetCommitParams(
                        "g", {("t", seed): CommittedOffset(rng.randint(0, 99), -1, "", 0)}, member_id,
                        join.generation_id))
                    time.sleep(rng.uniform(0, 0.05))
                if rng.random() < 0.3:
                    coordinator.handle_leave_group(LeaveGroupParams("g", [LeaveMember(member_id)]))
                    member_id = ""
            if member_id:
                coordinator.handle_leave_group(LeaveGroupParams("g", [LeaveMember(member_id)]))
        except BaseException as e:  # surfaced by the main thread
            errors.append(e)

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(MEMBERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(RUN_S + 4 * ANSWER_TIMEOUT_S)
    try:
        assert not any(t.is_alive() for t in threads), "a member thread is stuck"
        assert errors == []
        assert joins[0] > MEMBERS
        group = coordinator.get_group("g")
        assert group is not None
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while group.state is not GroupState.EMPTY and time.monotonic() < deadline:
            time.sleep(0.05)  # the last leave's rebalance round completes on the timer thread
        assert group.state is GroupState.EMPTY and not group.members
    finally:
        coordinator.shutdown()
