"""Async clients for asyncio and trio (on anyio), over the sync clients' core; see docs/ARCHITECTURE.md "Async API".

::

    from pykafka_client.aio import AsyncAdminClient, AsyncKafkaConsumer, AsyncKafkaProducer, AsyncKafkaShareConsumer
"""

from pykafka_client.aio.admin import AsyncAdminClient
from pykafka_client.aio.consumer import AsyncConsumerRebalanceListener, AsyncKafkaConsumer
from pykafka_client.aio.producer import AsyncKafkaProducer, DeliveryFuture
from pykafka_client.aio.share_consumer import AsyncKafkaShareConsumer

__all__ = [
    "AsyncAdminClient",
    "AsyncConsumerRebalanceListener",
    "AsyncKafkaConsumer",
    "AsyncKafkaProducer",
    "AsyncKafkaShareConsumer",
    "DeliveryFuture",
]
