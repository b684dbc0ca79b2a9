"""AdminClient configuration: Kafka's ``AdminClientConfig`` keys, names and defaults.

The shared keys (bootstrap, timeouts, backoffs, ``security.protocol``, ``ssl.*``, ``sasl.*``) come from
:mod:`pykafka_client.common_client_configs`; this module adds the admin's own. Unknown keys raise
:class:`~pykafka_client.errors.ConfigurationError` naming the key with a did-you-mean suggestion. Values
may be given as Python values or as strings (``.properties`` style).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykafka_client.common_client_configs import define_common_client_configs, define_default_api_timeout
from pykafka_client.config import INT_MAX, AbstractConfig, ConfigDef, ConfigType, at_least

ADMIN_CONFIG = define_default_api_timeout(
    define_common_client_configs(
        ConfigDef(),
        # AdminClientConfig's own defaults for shared keys
        {"connections.max.idle.ms": 300_000, "enable.metrics.push": False},
    )
).define("retries", ConfigType.INT, INT_MAX, at_least(0))


class AdminClientConfig(AbstractConfig):
    """Parsed admin configuration (Java ``AdminClientConfig``); keyword arguments may name keys with
    ``_`` for ``.`` (:func:`pykafka_client.config.merge_config`)."""

    def __init__(self, originals: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(ADMIN_CONFIG, originals, overrides)
