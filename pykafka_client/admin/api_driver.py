"""The generic admin driver (Java ``AdminApiDriver``, here synchronous, in the caller's thread): runs an
:class:`~pykafka_client.admin.api_handler.AdminApiHandler` about a set of keys through its two stages.

1. **Lookup**: the handler's lookup strategy maps the pending keys to brokers (grouped, one request per
   broker), fails the keys that cannot be looked up, and leaves unmapped the ones not found yet.
2. **Fulfilment**: each broker's request is built at the version both sides support (the handler's fallback
   API for a broker without its API) and sent; the answer completes or fails each key, sends the keys of a
   stale target back to the lookup (only those), and asks the same broker again, after a backoff, about the
   keys it could not answer yet.

When the handler's targets move (a coordinator), a target that cannot be reached (disconnected, refusing
connections, gone from the metadata) sends its keys back to the lookup too (Java: a DisconnectException
retries the lookup), which finds the new coordinator once the cluster elected one.

Rounds repeat, after a backoff, for the keys that went back to the lookup, until none is left or the call's
timer expires: a key still pending then fails with a timeout naming the API, the key, the broker last asked
and the last error (its cause).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

from pykafka_client.admin.api_handler import (
    AdminApiHandler,
    ApiResult,
    FallbackApi,
    Target,
    TargetFinder,
    UnreachableTargetError,
)
from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.protocol.api_keys import ApiKey, api_name
from pykafka_client.structs import Node
from pykafka_client.utils.time import Timer

K = TypeVar("K")
V = TypeVar("V")


class DriverContext(TargetFinder, Protocol):
    """What the driver asks of the AdminContext, beyond what a lookup may."""

    def send(self, api_key: ApiKey, build: Callable[[int], Any], target: Target, timer: Timer, *,
             fallback: tuple[ApiKey, Callable[[int], Any]] | None = None,
             rediscover: bool = False) -> tuple[Node, Any]: ...

    def backoff(self, timer: Timer) -> None: ...

    def expired(self, timer: Timer, what: str) -> KafkaTimeoutError: ...


def key_name(key: object) -> str:
    """``topic-partition`` for a partition, the key's repr otherwise (for messages)."""
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str) and isinstance(key[1], int):
        return f"{key[0]}-{key[1]}"
    return repr(key)


def timed_out(ctx: DriverContext, handler: AdminApiHandler[K, V], timer: Timer, key: K,
              error: BaseException | None, node_id: int | None) -> KafkaTimeoutError:
    """The timeout of a key still pending when the call's time ran out (Java: a TimeoutException caused by the
    last error): names the API, the key, the broker last asked about it and its last error (chained)."""
    target = handler.lookup.description
    tried = f"{target} last tried: node {node_id}" if node_id is not None else f"no {target} reached"
    last = f"last error: {type(error).__name__}: {error}" if error is not None else "no answer"
    timeout = ctx.expired(timer, f"on {api_name(handler.api_key)} for {key_name(key)} ({tried}; {last}); "
                                 "retry once the cluster recovers, or give the call a longer timeout")
    timeout.__cause__ = error
    return timeout


def drive(ctx: DriverContext, handler: AdminApiHandler[K, V], keys: Sequence[K], timer: Timer) -> ApiResult[K, V]:
    """Every key's value or error (see the module docstring); an error raised by a stage stops the call."""
    result: ApiResult[K, V] = ApiResult()
    lookup = handler.lookup
    pending: dict[K, BaseException | None] = dict.fromkeys(keys)
    tried: dict[K, int] = {}
    stale = False
    while pending:
        if stale:
            if timer.is_expired():
                for key, error in pending.items():
                    result.fail(key, timed_out(ctx, handler, timer, key, error, tried.get(key)))
                break
            ctx.backoff(timer)
        unmapped: dict[K, BaseException | None] = {}
        try:
            for found in lookup.lookup(ctx, list(pending), timer, stale):
                for key, error in found.failed.items():
                    result.fail(key, error)
                unmapped.update(found.unmapped)
                for target, group in found.mapped:
                    unmapped.update(fulfil(ctx, handler, target, group, timer, result, tried))
        except KafkaTimeoutError as e:
            if not lookup.targets_move or not timer.is_expired():
                raise
            # the time ran out in a lookup or a request: each key still open names its own last error
            for key, error in pending.items():
                if key not in result.completed:
                    last = unmapped.get(key) or error or e
                    result.fail(key, timed_out(ctx, handler, timer, key, last, tried.get(key)))
            break
        pending = {k: e for k, e in unmapped.items() if k not in result.completed and k not in result.failed}
        stale = True
    return result


def fulfil(ctx: DriverContext, handler: AdminApiHandler[K, V], target: Target, keys: list[K], timer: Timer,
           result: ApiResult[K, V], tried: dict[K, int]) -> dict[K, BaseException | None]:
    """Ask ``target()`` about ``keys`` (again, after a backoff, about those it says to retry) and merge the
    answers into ``result``; returns the keys to look up again, with their last error. When the handler's
    targets move, an unreachable target sends its keys back to the lookup. ``tried``: each key's last broker
    (updated here)."""
    unmapped: dict[K, BaseException | None] = {}
    rediscover = handler.lookup.targets_move
    while keys:
        fallback = None
        if isinstance(handler, FallbackApi):
            fallback = (handler.fallback_api_key, partial(handler.build_fallback_request, keys=keys))
        try:
            node, response = ctx.send(handler.api_key, partial(handler.build_request, keys=keys), target, timer,
                                      fallback=fallback, rediscover=rediscover)
        except UnreachableTargetError as e:
            for key in keys:
                unmapped[key] = e
                if e.node_id is not None:
                    tried[key] = e.node_id
            break
        tried.update(dict.fromkeys(keys, node.id))
        answer = handler.handle_response(node, keys, response)
        result.merge(answer)
        unmapped.update(answer.unmapped)
        keys = list(answer.retry)
        if keys and timer.is_expired():
            for key, error in answer.retry.items():
                result.fail(key, timed_out(ctx, handler, timer, key, error, node.id))
            break
        if keys:
            ctx.backoff(timer)
            target = ctx.broker_target(node.id)
    return unmapped
