"""The API versions one broker advertised (Java: ``clients.NodeApiVersions``).

The usable version of an API is ``min(client max, broker max)`` provided it is at least
``max(client min, broker min)``; otherwise the request cannot be sent to that broker at all and
:meth:`NodeApiVersions.latest_usable_version` raises :class:`UnsupportedVersionError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey


class NodeApiVersions:
    """``api_key -> (min, max)`` as advertised by one node."""

    __slots__ = ("_versions", "finalized_features_epoch", "supported_features", "finalized_features")

    def __init__(
        self,
        versions: Mapping[int, tuple[int, int]],
        supported_features: Mapping[str, tuple[int, int]] | None = None,
        finalized_features: Mapping[str, tuple[int, int]] | None = None,
        finalized_features_epoch: int = -1,
    ) -> None:
        self._versions: dict[int, tuple[int, int]] = dict(versions)
        self.supported_features = dict(supported_features or {})
        self.finalized_features = dict(finalized_features or {})
        self.finalized_features_epoch = finalized_features_epoch

    @classmethod
    def from_api_versions(cls, api_keys: Iterable[Any], response: Any = None) -> NodeApiVersions:
        """Build from an ``ApiVersionsResponse``'s ``api_keys`` (objects with api_key/min_version/max_version)."""
        versions: dict[int, tuple[int, int]] = {}
        for item in api_keys:
            versions[int(item.api_key)] = (int(item.min_version), int(item.max_version))
        supported: dict[str, tuple[int, int]] = {}
        finalized: dict[str, tuple[int, int]] = {}
        epoch = -1
        if response is not None:
            for f in getattr(response, "supported_features", None) or ():
                supported[str(f.name)] = (int(f.min_version), int(f.max_version))
            for f in getattr(response, "finalized_features", None) or ():
                finalized[str(f.name)] = (int(f.min_version_level), int(f.max_version_level))
            epoch = int(getattr(response, "finalized_features_epoch", -1))
        return cls(versions, supported, finalized, epoch)

    @classmethod
    def create(cls, overrides: Mapping[int, tuple[int, int]] | None = None) -> NodeApiVersions:
        """A node that supports every API at exactly the client's range, with ``overrides`` (tests)."""
        versions: dict[int, tuple[int, int]] = {int(k): v for k, v in CLIENT_SUPPORTED_VERSIONS.items()}
        versions.update(overrides or {})
        return cls(versions)

    def api_version(self, api_key: int) -> tuple[int, int] | None:
        return self._versions.get(int(api_key))

    def latest_usable_version(
        self, api_key: int, oldest_allowed: int | None = None, latest_allowed: int | None = None
    ) -> int:
        """The highest version both sides support within ``[oldest_allowed, latest_allowed]``."""
        key = int(api_key)
        if oldest_allowed is None or latest_allowed is None:
            client = CLIENT_SUPPORTED_VERSIONS.get(ApiKey(key)) if key in ApiKey._value2member_map_ else None
            lo = oldest_allowed if oldest_allowed is not None else (client[0] if client else 0)
            hi = latest_allowed if latest_allowed is not None else (client[1] if client else 0)
        else:
            lo, hi = oldest_allowed, latest_allowed
        broker = self._versions.get(key)
        if broker is not None:
            usable_min, usable_max = max(lo, broker[0]), min(hi, broker[1])
            if usable_min <= usable_max:
                return usable_max
        name = ApiKey(key).name if key in ApiKey._value2member_map_ else f"API key {key}"
        if broker is None:
            raise UnsupportedVersionError(f"the node does not support {name} at all; a newer broker is needed")
        raise UnsupportedVersionError(
            f"the node supports {name} at versions {broker[0]}-{broker[1]}, but this request needs a"
            f" version in {lo}-{hi}; upgrade the broker or do not use the feature that needs it"
        )

    def all_versions(self) -> dict[int, tuple[int, int]]:
        return dict(self._versions)

    def __repr__(self) -> str:
        parts = []
        for key, (lo, hi) in sorted(self._versions.items()):
            name = ApiKey(key).name if key in ApiKey._value2member_map_ else f"UNKNOWN({key})"
            parts.append(f"{name}({key}): {lo} to {hi}")
        return "NodeApiVersions(" + ", ".join(parts) + ")"
