"""The generic admin driver (Java ``AdminApiDriver``, here synchronous, in the caller's thread): runs an
:class:`~pykafka_client.admin.api_handler.AdminApiHandler` about a set of keys through its two stages.

1. **Lookup**: the handler's lookup strategy maps the pending keys to brokers (grouped, one request per
   broker), fails the keys that cannot be looked up, and leaves unmapped the ones not found yet.
2. **Fulfilment**: each broker's request is built at the version both sides support (the handler's fallback
   API for a broker without its API) and sent; the answer completes or fails each key, sends the keys of a
   stale target back to the lookup (only those), and asks the same broker again, after a backoff, about the
   keys it could not answer yet.

Rounds repeat, after a backoff, for the keys that went back to the lookup, until none is left or the call's
timer expires: a key still pending then fails with its last error, or with a timeout naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

from pykafka_client.admin.api_handler import AdminApiHandler, ApiResult, FallbackApi, Target, TargetFinder
from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.structs import Node
from pykafka_client.utils.time import Timer

K = TypeVar("K")
V = TypeVar("V")


class DriverContext(TargetFinder, Protocol):
    """What the driver asks of the AdminContext, beyond what a lookup may."""

    def send(self, api_key: ApiKey, build: Callable[[int], Any], target: Target, timer: Timer, *,
             fallback: tuple[ApiKey, Callable[[int], Any]] | None = None) -> tuple[Node, Any]: ...

    def backoff(self, timer: Timer) -> None: ...

    def expired(self, timer: Timer, what: str) -> KafkaTimeoutError: ...


def key_name(key: object) -> str:
    """``topic-partition`` for a partition, the key's repr otherwise (for messages)."""
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str) and isinstance(key[1], int):
        return f"{key[0]}-{key[1]}"
    return repr(key)


def drive(ctx: DriverContext, handler: AdminApiHandler[K, V], keys: Sequence[K], timer: Timer) -> ApiResult[K, V]:
    """Every key's value or error (see the module docstring); an error raised by a stage stops the call."""
    result: ApiResult[K, V] = ApiResult()
    lookup = handler.lookup
    pending: dict[K, BaseException | None] = dict.fromkeys(keys)
    stale = False
    while pending:
        if stale:
            if timer.is_expired():
                for key, error in pending.items():
                    result.fail(key, error or ctx.expired(timer, f"waiting for the {lookup.description} of "
                                                                 f"{key_name(key)}"))
                break
            ctx.backoff(timer)
        unmapped: dict[K, BaseException | None] = {}
        for found in lookup.lookup(ctx, list(pending), timer, stale):
            for key, error in found.failed.items():
                result.fail(key, error)
            unmapped.update(found.unmapped)
            for target, group in found.mapped:
                unmapped.update(fulfil(ctx, handler, target, group, timer, result))
        pending = {k: e for k, e in unmapped.items() if k not in result.completed and k not in result.failed}
        stale = True
    return result


def fulfil(ctx: DriverContext, handler: AdminApiHandler[K, V], target: Target, keys: list[K], timer: Timer,
           result: ApiResult[K, V]) -> dict[K, BaseException | None]:
    """Ask ``target()`` about ``keys`` (again, after a backoff, about those it says to retry) and merge the
    answers into ``result``; returns the keys to look up again, with their last error."""
    unmapped: dict[K, BaseException | None] = {}
    while keys:
        fallback = None
        if isinstance(handler, FallbackApi):
            fallback = (handler.fallback_api_key, partial(handler.build_fallback_request, keys=keys))
        node, response = ctx.send(handler.api_key, partial(handler.build_request, keys=keys), target, timer,
                                  fallback=fallback)
        answer = handler.handle_response(node, keys, response)
        result.merge(answer)
        unmapped.update(answer.unmapped)
        keys = list(answer.retry)
        if keys and timer.is_expired():
            for key, error in answer.retry.items():
                result.fail(key, error or ctx.expired(timer, f"waiting for node {node.id} to answer about "
                                                             f"{key_name(key)}"))
            break
        if keys:
            ctx.backoff(timer)
            target = ctx.broker_target(node.id)
    return unmapped
