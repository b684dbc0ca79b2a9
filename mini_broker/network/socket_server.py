r"""The broker's socket server (Kafka: ``kafka.network.SocketServer``): the listeners' :class:`Acceptor`\ s
(:mod:`~mini_broker.network.acceptor`), their :class:`Processor`\ s (:mod:`~mini_broker.network.processor`)
and one :class:`ConnectionQuotas` (:mod:`~mini_broker.network.connection_quotas`).

Threads: one :class:`Acceptor` per listener hands accepted sockets round-robin to its ``num.network.threads``
:class:`Processor` threads through bounded new-connection queues (20 each; the acceptor blocks only when
all are full). Each Processor owns one transport ``Selector`` in the server role and runs Kafka's loop:
configure new connections -> process new responses -> poll -> completed receives -> completed sends ->
disconnects -> close excess connections.

Invariant: one request in flight per connection, kept by the channel's mute state machine (KafkaChannel's
``ChannelMuteState``; the Processor only sends it events, as Kafka's Processor does). After a complete
receive the request is parsed, the channel is muted (``selector.mute``: NOT_MUTED -> MUTED) and gets
``REQUEST_RECEIVED`` (-> MUTED_AND_RESPONSE_PENDING), then the request is put on the RequestChannel
(blocking while it is full: TCP backpressure). When the response has been written, or a NoOpResponse
arrived, the channel gets ``RESPONSE_SENT`` (-> MUTED) and ``selector.unmute`` unmutes it (only plain
MUTED unmutes, so a throttled channel would stay muted). Frames that the transport still hands out for a
muted connection are kept, in order, and processed after the unmute.

Any exception while handling one channel closes that channel only; processor and acceptor threads never die.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable

from mini_broker.config import KafkaConfig
from mini_broker.network.acceptor import Acceptor
from mini_broker.network.connection_quotas import ConnectionQuotas
from mini_broker.network.processor import Processor, RequestParser, ServerSelector
from mini_broker.network.request_channel import RequestChannel
from mini_broker.security.listener_security import BrokerSecurity, server_channel_builder
from mini_broker.security.principal_mapping import SslPrincipalMapper
from mini_broker.security.sasl_authenticator import DelayedAuthFailures
from pykafka_client.network.transport.channel_builder import ChannelBuilder
from pykafka_client.network.transport.memory_pool import CountingMemoryPool, MemoryPool, new_memory_pool
from pykafka_client.utils.time import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from mini_broker.metrics import BrokerMetrics

#: (processor id, config, the shared request memory pool or None, the listener's channel builder) -> the
#: processor's selector
SelectorFactory = Callable[[int, KafkaConfig, "MemoryPool | None", ChannelBuilder], ServerSelector]


def create_memory_pool(config: KafkaConfig) -> CountingMemoryPool | None:
    """The request memory pool bounded by ``queued.max.request.bytes`` (None when it is -1 or 0: unbounded)."""
    capacity = config.queued_max_request_bytes
    return new_memory_pool(capacity) if capacity > 0 else None


def default_selector_factory(processor_id: int, config: KafkaConfig, memory_pool: MemoryPool | None,
                             channel_builder: ChannelBuilder) -> ServerSelector:
    """The transport Selector in server role, with the broker's receive limit, idle expiry and memory pool."""
    from pykafka_client.network.transport.selector import Selector

    return Selector(
        max_receive_size=config.socket_request_max_bytes,
        connections_max_idle_ms=config.connections_max_idle_ms,
        channel_builder=channel_builder,
        memory_pool=memory_pool,
        # requests read ahead (pipelined by a producer) are handed out every other poll without an epoll_wait
        skip_wait_when_buffered=True,
    )


def _as_float(fn: Callable[[], int]) -> Callable[[], float]:
    return lambda: float(fn())


class SocketServer:
    """All listeners: an Acceptor and ``num.network.threads`` Processors each, one ConnectionQuotas."""

    def __init__(self, config: KafkaConfig, channel: RequestChannel, parser: RequestParser, time: Time = SYSTEM_TIME,
                 metrics: BrokerMetrics | None = None, selector_factory: SelectorFactory | None = None,
                 security: BrokerSecurity | None = None,
                 disconnect_listeners: Sequence[Callable[[str], None]] = ()) -> None:
        """``disconnect_listeners``: called with the id of each client connection that closes (Kafka's
        ConnectionDisconnectListener; the share sessions it opened end)."""
        self.config = config
        self.channel = channel
        inter_broker = config.get("inter.broker.listener.name")
        self.quotas = ConnectionQuotas(config.max_connections_per_ip, config.max_connections_per_ip_overrides,
                                       config.max_connections,
                                       max_connection_creation_rate=config.max_connection_creation_rate,
                                       protected_listener=str(inter_broker) if inter_broker else None, time=time)
        for endpoint in config.listeners:
            self.quotas.add_listener(endpoint.listener_name,
                                     config.listener_int(endpoint.listener_name, "max.connections"),
                                     config.listener_int(endpoint.listener_name, "max.connection.creation.rate"))
        self.memory_pool = create_memory_pool(config)
        self.acceptors: list[Acceptor] = []
        self.processors: list[Processor] = []
        factory = selector_factory or default_selector_factory
        if metrics is not None:
            metrics.network_processor_idle.threads = config.num_network_threads * len(config.listeners)
        next_id = 0
        try:
            for endpoint in config.listeners:
                procs: list[Processor] = []
                listener = endpoint.listener_name
                mapper = SslPrincipalMapper(str(config.listener_value(listener, "ssl.principal.mapping.rules") or "DEFAULT"))
                # only SASL sessions delay their failures (connection.failed.authentication.delay.ms): other
                # listeners' processors have no queue of them to look at every round
                sasl = config.listener_security_protocol(listener).startswith("SASL_")
                for _ in range(config.num_network_threads):
                    failures = DelayedAuthFailures(time) if sasl else None
                    builder = server_channel_builder(config, listener, security, failures)
                    p = Processor(next_id, endpoint, config, channel, self.quotas, parser,
                                  factory(next_id, config, self.memory_pool, builder), time, metrics,
                                  auth_failures=failures, principal_mapper=mapper.principal_name,
                                  disconnect_listeners=disconnect_listeners)
                    channel.add_processor(next_id, p)
                    procs.append(p)
                    next_id += 1
                self.processors.extend(procs)
                self.acceptors.append(Acceptor(endpoint, config, self.quotas, procs, metrics))
        except Exception:
            for a in self.acceptors:
                a.server_socket.close()
            raise
        if metrics is not None:
            metrics.gauge("kafka_network_RequestChannel_RequestQueueSize", lambda: float(channel.request_queue_size()))
            metrics.gauge("kafka_server_socket_server_metrics_connection_count", lambda: float(self.quotas.total))
            self._register_quota_gauges(metrics)

    def _register_quota_gauges(self, metrics: BrokerMetrics) -> None:
        """Accepted, rejected, throttled and excess-closed connections, and the count per listener."""
        qm = self.quotas.metrics
        counters: dict[str, Callable[[], int]] = {
            "ConnectionsAcceptedTotal": lambda: qm.accepted_total,
            "ConnectionsRejectedTotal": lambda: qm.rejected_total,
            "ConnectionsIpThrottledTotal": lambda: qm.ip_throttled_total,
            "ConnectionsRateThrottledTotal": lambda: qm.rate_throttled_total,
            "ConnectionsExcessClosedTotal": lambda: qm.excess_closed_total,
        }
        for name, fn in counters.items():
            metrics.gauge(f"kafka_network_ConnectionQuotas_{name}", _as_float(fn))
        for endpoint in self.config.listeners:
            metrics.gauge("kafka_network_ConnectionQuotas_ListenerConnectionCount",
                          _as_float(functools.partial(self.quotas.listener_count, endpoint.listener_name)),
                          listener=endpoint.listener_name)

    def bound_port(self, listener_name: str | None = None) -> int:
        for a in self.acceptors:
            if listener_name is None or a.endpoint.listener_name == listener_name:
                return a.bound_port
        raise KeyError(listener_name)

    def start(self) -> None:
        for p in self.processors:
            p.start()
        for a in self.acceptors:
            a.start()

    def stop_processing(self) -> None:
        """Stop accepting and close every connection (first step of shutdown)."""
        for a in self.acceptors:
            a.initiate_shutdown()
        self.quotas.close()
        for p in self.processors:
            p.initiate_shutdown()
        for a in self.acceptors:
            a.join(5)
        for p in self.processors:
            p.join(5)
            self.channel.remove_processor(p.id)
