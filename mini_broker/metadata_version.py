"""Kafka release versions as the deprecated version configs take them (Java ``MetadataVersion`` and
``MetadataVersionValidator``).

``message.format.version``, ``log.message.format.version`` and ``inter.broker.protocol.version`` name a Kafka
release, optionally with an internal version (``0.10.0``, ``0.10.0-IV1``, ``2.8``, ``3.0-IV1``). Kafka 3.x
accepts every version it knows and, since the inter-broker protocol of a KRaft broker is always 3.0-IV1 or
newer, ignores the message format version: records are always written in format v2. mini_broker accepts the
same values (the list of Kafka 3.9) and ignores them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykafka_client.errors import ConfigurationError

# (release, internal version) in Kafka's order, as of Kafka 3.9.
_RELEASES: tuple[tuple[str, str], ...] = (
    ("0.8.0", ""), ("0.8.1", ""), ("0.8.2", ""), ("0.9.0", ""),
    ("0.10.0", "IV0"), ("0.10.0", "IV1"), ("0.10.1", "IV0"), ("0.10.1", "IV1"), ("0.10.1", "IV2"),
    ("0.10.2", "IV0"), ("0.11.0", "IV0"), ("0.11.0", "IV1"), ("0.11.0", "IV2"),
    ("1.0", "IV0"), ("1.1", "IV0"), ("2.0", "IV0"), ("2.0", "IV1"), ("2.1", "IV0"), ("2.1", "IV1"), ("2.1", "IV2"),
    ("2.2", "IV0"), ("2.2", "IV1"), ("2.3", "IV0"), ("2.3", "IV1"), ("2.4", "IV0"), ("2.4", "IV1"), ("2.5", "IV0"),
    ("2.6", "IV0"), ("2.7", "IV0"), ("2.7", "IV1"), ("2.7", "IV2"), ("2.8", "IV0"), ("2.8", "IV1"),
    ("3.0", "IV0"), ("3.0", "IV1"), ("3.1", "IV0"), ("3.2", "IV0"),
    ("3.3", "IV0"), ("3.3", "IV1"), ("3.3", "IV2"), ("3.3", "IV3"), ("3.4", "IV0"),
    ("3.5", "IV0"), ("3.5", "IV1"), ("3.5", "IV2"), ("3.6", "IV0"), ("3.6", "IV1"), ("3.6", "IV2"),
    ("3.7", "IV0"), ("3.7", "IV1"), ("3.7", "IV2"), ("3.7", "IV3"), ("3.7", "IV4"), ("3.8", "IV0"), ("3.9", "IV0"),
)


@dataclass(frozen=True, order=True)
class MetadataVersion:
    """One Kafka version; ordered as Kafka orders them (by position in the release list)."""

    ordinal: int
    release: str
    internal: str

    @property
    def version(self) -> str:
        """The full name (``0.10.0-IV1``, or ``0.9.0`` for releases without internal versions)."""
        return f"{self.release}-{self.internal}" if self.internal else self.release

    def is_at_least(self, other: MetadataVersion) -> bool:
        return self.ordinal >= other.ordinal

    def __str__(self) -> str:
        return self.version


VERSIONS: tuple[MetadataVersion, ...] = tuple(MetadataVersion(i, r, iv) for i, (r, iv) in enumerate(_RELEASES))

# Full names, plus each release name for its latest internal version ("0.10.0" -> 0.10.0-IV1).
_BY_NAME: dict[str, MetadataVersion] = {v.version: v for v in VERSIONS} | {v.release: v for v in VERSIONS}

IBP_0_11_0_IV0 = _BY_NAME["0.11.0-IV0"]
IBP_3_0_IV1 = _BY_NAME["3.0-IV1"]
#: The first version a KRaft broker runs; the inter-broker protocol of mini_broker (a KRaft broker) is at least this.
MINIMUM_KRAFT_VERSION = IBP_3_0_IV1
#: Kafka 3.x's default of ``message.format.version`` / ``log.message.format.version``.
DEFAULT_MESSAGE_FORMAT_VERSION = IBP_3_0_IV1.version
#: Kafka 3.9's default of ``inter.broker.protocol.version`` (its latest production version).
LATEST_PRODUCTION = VERSIONS[-1]


def from_version_string(text: str) -> MetadataVersion:
    """The version ``text`` names. Releases before 1.0 have three numbers, later ones two; anything after them
    is ignored (``0.10.0.1`` is 0.10.0, ``2.8.1`` is 2.8). Raises ValueError for a name Kafka does not know."""
    segments = text.split(".")
    while segments and not segments[-1]:  # Java's split drops trailing empty segments
        segments.pop()
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(segments) else ".".join(segments[:keep])
    found = _BY_NAME.get(key)
    if found is None:
        raise ValueError(f"Version {text} is not a valid version")
    return found


def version_validator(name: str, value: Any) -> None:
    """Config validator: ``value`` (a string; None passes) is a Kafka version."""
    if value is None:
        return
    try:
        from_version_string(str(value))
    except ValueError as e:
        raise ConfigurationError(f"Invalid value {value} for configuration {name}: {e}; valid versions are "
                                 f"{VERSIONS[0]} to {LATEST_PRODUCTION}, e.g. 0.10.0, 2.8, 3.0-IV1") from None
