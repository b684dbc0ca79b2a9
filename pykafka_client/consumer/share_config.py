"""Share consumer configuration (Java: ShareConsumerConfig, KIP-932): the consumer keys a share consumer
uses, plus ``share.acknowledgement.mode`` (``implicit``: the next poll or commit accepts the previous poll's
records; ``explicit``: the application acknowledges each record). ``group.id`` is required."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykafka_client.common_client_configs import define_common_client_configs, define_default_api_timeout
from pykafka_client.config import AbstractConfig, ConfigDef, ConfigType, at_least, one_of
from pykafka_client.errors import InvalidGroupIdError

_T = ConfigType

# fmt: off
SHARE_CONSUMER_CONFIG = (
    define_default_api_timeout(define_common_client_configs(ConfigDef()))
    .define("client.rack", _T.STRING, "")
    .define("group.id", _T.STRING, None, nullable=True)
    .define("share.acknowledgement.mode", _T.STRING, "implicit", one_of("implicit", "explicit"))
    .define("max.poll.records", _T.INT, 500, at_least(1))
    .define("fetch.min.bytes", _T.INT, 1, at_least(0))
    .define("fetch.max.bytes", _T.INT, 52_428_800, at_least(0))
    .define("fetch.max.wait.ms", _T.INT, 500, at_least(0))
    .define("check.crcs", _T.BOOLEAN, True)
    .define("exclude.internal.topics", _T.BOOLEAN, True)
    .define("allow.auto.create.topics", _T.BOOLEAN, True)
    .define("key.deserializer", _T.CLASS, None, nullable=True)
    .define("value.deserializer", _T.CLASS, None, nullable=True)
)
# fmt: on


class ShareConsumerConfig(AbstractConfig):
    """Validated share consumer configuration; read values with ``cfg["share.acknowledgement.mode"]``."""

    def __init__(self, configs: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__(SHARE_CONSUMER_CONFIG, configs, overrides)
        mode = self.values["share.acknowledgement.mode"]
        self.values["share.acknowledgement.mode"] = str(mode).lower()
        if not self.values["group.id"]:
            raise InvalidGroupIdError("a share consumer needs a group.id: set group.id to the share group's name")

    @property
    def explicit_acknowledgement(self) -> bool:
        return bool(self.values["share.acknowledgement.mode"] == "explicit")
