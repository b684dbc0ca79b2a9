"""ClientThread (pykafka_client.aio._client_thread): order, preemption of a poll, cancellation, loop requests
(rebalance listeners) that await nested calls; under asyncio and trio. The "client" here is a stand-in whose
blocking call waits on a threading.Event and honours wakeup() like the sync consumer; no broker, no sleeps."""

from __future__ import annotations

import threading

import anyio
import pytest

from pykafka_client.aio._client_thread import ClientThread
from pykafka_client.errors import IllegalStateError, WakeupException

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

WAIT = 10.0  # generous bound of every wait (a failure, never a pass condition)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class FakeClient:
    """A blocking call that ends when released or woken up (WakeupException), like the consumer's poll."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.woken = False
        self.release = threading.Event()
        self.entered = threading.Event()
        self.calls: list[str] = []

    def wakeup(self) -> None:
        with self.lock:
            self.woken = True
        self.release.set()

    def clear_wakeup(self) -> None:
        with self.lock:
            self.woken = False

    def blocking(self, name: str, result: object = None) -> object:
        self.calls.append(name)
        self.entered.set()
        if not self.release.wait(WAIT):
            raise AssertionError("never released")
        with self.lock:
            if self.woken:
                self.woken = False
                self.release.clear()
                raise WakeupException("woken up")
        return result


def make(client: FakeClient) -> ClientThread:
    return ClientThread("test-client-thread", client.wakeup, client.clear_wakeup,
                        lambda: IllegalStateError("closed"))  # fmt: skip


async def test_calls_run_on_one_thread_and_return_or_raise() -> None:
    thread = make(FakeClient())
    names = {await thread.call(lambda: threading.current_thread().name) for _ in range(3)}
    assert names == {"test-client-thread"}

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await thread.call(fail)
    thread.stop()
    with pytest.raises(IllegalStateError):
        await thread.call(lambda: 1)


async def test_a_poll_steps_aside_for_a_call_made_meanwhile_then_goes_on() -> None:
    client = FakeClient()
    thread = make(client)
    polls = 0

    def poll() -> str:
        nonlocal polls
        polls += 1
        return str(client.blocking("poll", "records"))

    result: list[str] = []
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:

            async def poller() -> None:
                result.append(await thread.call(poll, preemptible=True))

            tg.start_soon(poller)
            await anyio.to_thread.run_sync(client.entered.wait, WAIT)
            # the seek-like call runs while the poll is pending (it woke the poll up)
            assert await thread.call(lambda: "seek") == "seek"
            assert not result  # the poll is still pending (started again after the seek)
            client.release.set()  # the poll, started again, now returns
    assert result == ["records"]
    assert polls == 2
    thread.stop()


async def test_cancelling_a_started_call_wakes_it_and_keeps_its_result() -> None:
    client = FakeClient()
    thread = make(client)
    kept: list[object] = []

    def returns_despite_wakeup() -> str:
        client.entered.set()
        client.release.wait(WAIT)
        return "taken records"  # finished before it saw the wakeup: must not be lost

    with anyio.fail_after(WAIT):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def canceller() -> None:
                    await anyio.to_thread.run_sync(client.entered.wait, WAIT)
                    scope.cancel()

                tg.start_soon(canceller)
                await thread.call(returns_despite_wakeup, preemptible=True, on_cancelled_result=kept.append)
        assert scope.cancelled_caught
    assert kept == ["taken records"]
    # the wakeup the cancel sent is not left behind for the next call
    client.release.clear()
    client.release.set()
    assert await thread.call(lambda: client.blocking("next", "ok")) == "ok"
    thread.stop()


async def test_cancelling_a_blocked_call_interrupts_it_and_the_thread_stays_usable() -> None:
    client = FakeClient()
    thread = make(client)
    with anyio.fail_after(WAIT):
        with anyio.move_on_after(0.05):
            await thread.call(lambda: client.blocking("commit"))
    assert client.calls == ["commit"]
    assert await thread.call(lambda: 42) == 42
    thread.stop()


async def test_a_call_cancelled_before_it_started_never_runs() -> None:
    client = FakeClient()
    thread = make(client)
    ran: list[str] = []
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: thread.call(lambda: client.blocking("first")))
            await anyio.to_thread.run_sync(client.entered.wait, WAIT)
            with anyio.CancelScope() as scope:
                scope.cancel()
                await thread.call(lambda: ran.append("second"))
            client.release.set()
    assert ran == []
    thread.stop()


async def test_a_loop_request_runs_a_coroutine_in_the_awaiting_task_which_may_await_nested_calls() -> None:
    thread = make(FakeClient())
    seen: list[str] = []

    async def listener() -> str:
        # a rebalance listener calling the client (commit) while the client thread waits for it
        seen.append(await thread.call(lambda: "committed on " + threading.current_thread().name))
        await anyio.sleep(0)
        return "listener done"

    def poll_with_rebalance() -> object:
        return thread.call_in_loop(listener)

    with anyio.fail_after(WAIT):
        assert await thread.call(poll_with_rebalance, preemptible=True) == "listener done"
    assert seen == ["committed on test-client-thread"]

    async def failing_listener() -> None:
        raise KeyError("listener failed")

    with anyio.fail_after(WAIT), pytest.raises(KeyError):
        await thread.call(lambda: thread.call_in_loop(failing_listener))
    thread.stop()
