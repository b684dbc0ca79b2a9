"""Async clients for asyncio and trio (on anyio), over the sync clients' core; see docs/ARCHITECTURE.md "Async API".

::

    from pykafka_client.aio import AsyncAdminClient, AsyncKafkaConsumer, AsyncKafkaProducer, AsyncKafkaShareConsumer
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykafka_client.aio.admin import AsyncAdminClient
    from pykafka_client.aio.consumer import AsyncConsumerRebalanceListener, AsyncKafkaConsumer
    from pykafka_client.aio.producer import AsyncKafkaProducer, DeliveryFuture
    from pykafka_client.aio.share_consumer import AsyncKafkaShareConsumer

#: Each client is imported on first use (PEP 562), as in the top-level package: a producer-only program does not
#: load the consumer, share consumer and admin client with their protocol messages (~8 MiB of peak RSS).
_LAZY = {
    "AsyncAdminClient": "pykafka_client.aio.admin",
    "AsyncConsumerRebalanceListener": "pykafka_client.aio.consumer",
    "AsyncKafkaConsumer": "pykafka_client.aio.consumer",
    "AsyncKafkaProducer": "pykafka_client.aio.producer",
    "DeliveryFuture": "pykafka_client.aio.producer",
    "AsyncKafkaShareConsumer": "pykafka_client.aio.share_consumer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pykafka_client.aio' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AsyncAdminClient",
    "AsyncConsumerRebalanceListener",
    "AsyncKafkaConsumer",
    "AsyncKafkaProducer",
    "AsyncKafkaShareConsumer",
    "DeliveryFuture",
]
