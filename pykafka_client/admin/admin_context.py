"""What the AdminClient's call modules (``cluster``, ``topics``, ``groups``, ...) are given to run a call: the
:class:`AdminContext`, its NetworkClient, Metadata and clock, with the mechanics every call shares (wait for
a ready broker, send one request and wait for the answer, retry disconnects, back off, refresh metadata), and
the generic driver that runs an API's handler on them (``admin/api_driver.py``). The AdminClient owns one and hands it, never itself, to the call
modules (Java: the ``KafkaAdminClient`` internals an ``AdminApiHandler`` is driven by).

Driving the NetworkClient happens in the caller's thread, under :attr:`AdminContext.lock`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pykafka_client.admin.api_driver import drive
from pykafka_client.admin.api_handler import AdminApiHandler, ApiResult, UnreachableTargetError
from pykafka_client.errors import (
    DisconnectError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaTimeoutError,
)
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata import Metadata, oldest_metadata_version
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import MetadataRequest
from pykafka_client.structs import Node
from pykafka_client.utils.time import Time, Timer

#: the AdminClient's logger: its retries are logged under the name they always had
log = logging.getLogger("pykafka_client.admin.admin_client")

K = TypeVar("K")
V = TypeVar("V")


class AdminContext:
    """The collaborators and shared mechanics of the admin calls (see the module docstring).

    ``lock`` serializes the calls (one operation at a time); ``metadata`` is the admin's cluster view;
    ``client`` the NetworkClient driven in the caller's thread.
    """

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata,
        time: Time,
        *,
        default_timeout_ms: int,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        retries: int,
        bootstrap_servers: str = "",
    ) -> None:
        self.client = client
        self.bootstrap_servers = bootstrap_servers
        self.metadata = metadata
        self.time = time
        self.lock = threading.RLock()
        self.closed = False
        self.default_timeout_ms = default_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retries = retries

    def close(self) -> None:
        """Close every connection. Idempotent."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.client.close()

    # --- driving the NetworkClient -------------------------------------------------------------

    def timer(self, timeout: float | None) -> Timer:
        """The deadline of one call: ``timeout`` seconds, ``default.api.timeout.ms`` when None."""
        if self.closed:
            raise IllegalStateError("the AdminClient is closed")
        if timeout is None:
            return self.time.timer(self.default_timeout_ms)
        if timeout < 0:
            raise IllegalArgumentError(f"timeout must be non-negative, got {timeout}")
        return self.time.timer(int(timeout * 1000))

    def now(self) -> int:
        return self.time.hi_res_clock_ms()

    def poll(self, timer: Timer, max_ms: int = 100) -> None:
        timer.update()
        self.client.poll(max(0, min(timer.remaining_ms(), max_ms)), timer.current_time_ms())
        timer.update()
        self.metadata.maybe_throw_fatal_exception()

    def expired(self, timer: Timer, what: str) -> KafkaTimeoutError:
        """``timed out after N ms <what>``, and when no broker could be reached: the bootstrap servers and
        each address tried with its last connection error."""
        text = f"timed out after {timer.elapsed_ms()} ms {what}"
        reason = self.client.unreachable_reason()
        if reason is None:
            return KafkaTimeoutError(text)
        return KafkaTimeoutError(f"{text} (bootstrap.servers={self.bootstrap_servers}): {reason}")

    def least_loaded(self) -> Node | None:
        """The broker with the fewest in-flight requests (None: none is known or connectable now)."""
        return self.client.least_loaded_node(self.now()).node

    def controller_or_any(self) -> Node | None:
        cluster = self.metadata.fetch()
        if cluster.controller is not None:
            return cluster.controller
        return self.least_loaded()

    def broker_target(self, broker_id: int) -> Callable[[], Node | None]:
        """A target naming broker ``broker_id`` (asking for fresh metadata while it is not known)."""

        def target() -> Node | None:
            node = self.metadata.fetch().node_by_id(broker_id)
            if node is None:
                self.metadata.request_update()
            return node

        return target

    def await_ready(self, target: Callable[[], Node | None], timer: Timer, what: str, *,
                    rediscover: bool = False) -> Node:
        """``target()`` once it is connected and ready to send ``what`` to. ``rediscover``: raise
        :class:`UnreachableTargetError` as soon as the target refuses a connection (or is in its reconnect
        backoff after a failure), or is not in metadata fetched since, instead of waiting for it."""
        version = self.metadata.update_version()
        while True:
            node = target()
            if node is not None:
                if self.client.ready(node, self.now()):
                    return node
                auth = self.client.authentication_exception(node)
                if auth is not None:
                    raise auth
                if rediscover and self.client.connection_failed(node):
                    raise UnreachableTargetError(f"{what} could not be sent: the connection to node {node.id} "
                                                 "failed", node.id)
            elif rediscover and self.metadata.update_version() != version:
                raise UnreachableTargetError(f"{what} could not be sent: its broker is not in the cluster's "
                                             "metadata any more", None)
            if timer.is_expired():
                raise self.expired(timer, f"waiting for a broker to take the {what} request")
            self.poll(timer, 50)

    def send(
        self,
        api_key: ApiKey,
        build: Callable[[int], Any],
        target: Callable[[], Node | None],
        timer: Timer,
        *,
        fallback: tuple[ApiKey, Callable[[int], Any]] | None = None,
        rediscover: bool = False,
    ) -> tuple[Node, Any]:
        """Send ``build(version)`` to ``target()`` once it is ready and wait for the response (``version``: the
        newest both sides support); disconnects are retried until ``timer`` expires. ``fallback``: the API and
        builder to use instead with a broker that does not support ``api_key``. ``rediscover``: the target may
        have moved (a coordinator): a disconnect, or a target that cannot be connected, raises
        :class:`UnreachableTargetError` at once, for the caller to look the target up again. Returns (node,
        response body)."""
        what = api_key.name
        retries = 0
        while True:
            node = self.await_ready(target, timer, what, rediscover=rediscover)
            versions = self.client.api_versions.get(node.id_string)
            if fallback is not None and (versions is None or versions.api_version(api_key) is None):
                return self.send(*fallback, target, timer, rediscover=rediscover)
            version = versions.latest_usable_version(api_key) if versions is not None else None
            body = build(version if version is not None else 0)
            box: list[ClientResponse] = []
            request = self.client.new_client_request(
                node.id_string,
                body,
                self.now(),
                True,
                max(1, min(self.request_timeout_ms, timer.remaining_ms())),
                box.append,
                # a Metadata that must not auto-create, or that asks for all topics, has no older form
                # (Java's MetadataRequest.Builder refuses those versions too)
                oldest_allowed_version=oldest_metadata_version(body) if isinstance(body, MetadataRequest) else None,
                latest_allowed_version=version,
            )
            self.client.send(request, self.now())
            while not box:
                self.poll(timer, 200)
                if not box and timer.is_expired():
                    raise self.expired(timer, f"waiting for the {what} response from node {node.id}")
            response = box[0]
            if response.version_mismatch is not None:
                raise response.version_mismatch
            if response.authentication_exception is not None:
                raise response.authentication_exception
            if response.was_disconnected:
                how = "timed out" if response.was_timed_out else "disconnected"
                if rediscover:
                    log.info("%s to node %s failed (%s); looking its target up again", what, node.id, how)
                    raise UnreachableTargetError(f"{what} to node {node.id} failed ({how})", node.id)
                log.info("%s to node %s failed (%s); retrying", what, node.id, how)
                if timer.is_expired():
                    raise self.expired(timer, f"sending {what}")
                retries += 1
                if retries > self.retries:
                    raise DisconnectError(f"{what} to node {node.id} failed after {retries} attempts")
                self.backoff(timer)
                continue
            return node, response.response_body

    def run(self, handler: AdminApiHandler[K, V], keys: Sequence[K], timer: Timer) -> ApiResult[K, V]:
        """Drive ``handler`` about ``keys`` until each is completed or failed or ``timer`` expires (the generic
        driver, ``admin/api_driver.py``): every key's value or error."""
        return drive(self, handler, keys, timer)

    def run_call(self, make_handler: Callable[[Timer], AdminApiHandler[K, V]], keys: Sequence[K],
                 timeout: float | None, *, update_metadata: bool = False) -> dict[K, V]:
        """One whole call of a handler: under the lock, with the call's deadline, :meth:`run` the handler
        ``make_handler(timer)`` about ``keys``; ask for a metadata update when ``update_metadata`` (the call
        changed topics); then raise the first key's error, else return each key's value."""
        with self.lock:
            timer = self.timer(timeout)
            result = self.run(make_handler(timer), keys, timer)
            if update_metadata:
                self.metadata.request_update()
        result.raise_first_error()
        return result.completed

    def backoff(self, timer: Timer) -> None:
        """Wait ``retry.backoff.ms`` (at most until ``timer`` expires), serving the network meanwhile."""
        deadline = min(timer.remaining_ms(), self.retry_backoff_ms)
        wait = self.time.timer(deadline)
        while not wait.is_expired():
            self.poll(timer, wait.remaining_ms())
            wait.update()

    def refresh_metadata(self, timer: Timer, what: str) -> None:
        """Ask for fresh metadata and wait for it (``what``: why, for the timeout's message)."""
        version = self.metadata.request_update()
        while self.metadata.update_version() == version:
            if timer.is_expired():
                raise self.expired(timer, f"waiting for metadata ({what})")
            self.poll(timer, 100)
