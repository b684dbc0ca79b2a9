"""The channel steps a broker Processor takes per request (:class:`ServerChannelPathApi`): a Selector has them as
methods (the reference), and the kernel's ``ServerChannelPath`` (``records/kernel/server_channel_path.c.h``, made by
``Selector.compiled_server_path``) has the same ones compiled."""

from __future__ import annotations

from typing import Protocol

from pykafka_client.network.transport.channel import KafkaChannel
from pykafka_client.network.transport.selectable import NetworkSend


class ServerChannelPathApi(Protocol):
    """A server Selector's per-request channel steps (reference: the ``Selector`` methods of the same names)."""

    def send_completing(self, send: NetworkSend, /) -> bool:
        """Reference: :meth:`Selector.send_completing`."""
        ...

    def mute_channel(self, channel: KafkaChannel, request_received: bool = False, /) -> None:
        """Reference: :meth:`Selector.mute_channel`."""
        ...

    def unmute_channel(self, channel: KafkaChannel, response_sent: bool = False, /) -> bool:
        """Reference: :meth:`Selector.unmute_channel`."""
        ...

    def read_buffered(self, channel: KafkaChannel, /) -> bool:
        """Reference: :meth:`Selector.read_buffered`."""
        ...
