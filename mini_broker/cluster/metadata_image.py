"""A cluster broker's copy of the controller's metadata (Kafka: ``MetadataImage`` and ``MetadataDelta``), sans-IO.

The controller publishes every change as a *delta* ``{"version": v, "entries": [[kind, key, value or None],
...]}`` (see :mod:`mini_broker.cluster.controller_state`). A broker long-polls with the version it applied and
gets the deltas after it, or a snapshot (the whole image) when it just started or is further behind than the
controller keeps deltas. :class:`MetadataImage` holds the image as JSON entries and applies either;
each returns a :class:`MetadataDelta` naming what changed, so the broker updates only those topics, brokers,
ACLs and credentials (Kafka: ``BrokerMetadataPublisher`` publishing a delta) and a change costs what it
changed, not the image's size. :meth:`MetadataImage.to_image` rebuilds the image dictionary, equal to the
controller's :meth:`~mini_broker.cluster.controller_state.ControllerState.image` at the same version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MetadataDelta:
    """What applying deltas (or a snapshot) changed: per topic its new entry or None (deleted), and whether the
    brokers, the ACLs or the SCRAM credentials changed. ``snapshot``: a whole image replaced the old one (every
    consumer re-reads what it keeps, e.g. the logs on disk)."""

    topics: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    brokers: bool = False
    acls: bool = False
    scram_credentials: bool = False
    snapshot: bool = False


class MetadataGapError(ValueError):
    """Deltas that do not follow the applied version (the broker asks for a snapshot instead)."""


class MetadataImage:
    """The controller's image as a broker applied it (entries are JSON values, never modified in place: an entry
    is replaced whole, so readers may keep references to them)."""

    def __init__(self) -> None:
        self.version = -1
        self.cluster_id = ""
        self.counters: dict[str, int] = {"next_broker_epoch": 1, "next_producer_id": 0}
        self.topics: dict[str, dict[str, Any]] = {}
        self.brokers: dict[int, dict[str, Any]] = {}
        self.acls: list[dict[str, str]] = []
        self.scram_credentials: list[dict[str, Any]] = []

    @classmethod
    def of(cls, image: dict[str, Any]) -> MetadataImage:
        out = cls()
        out.replace(image)
        return out

    def to_image(self) -> dict[str, Any]:
        """The image as the controller builds it (same keys, topics by name, brokers by id)."""
        return {
            "version": self.version,
            "cluster_id": self.cluster_id,
            **self.counters,
            "brokers": [self.brokers[b] for b in sorted(self.brokers)],
            "topics": [self.topics[t] for t in sorted(self.topics)],
            "acls": list(self.acls),
            "scram_credentials": list(self.scram_credentials),
        }

    def replace(self, image: dict[str, Any]) -> MetadataDelta:
        """Apply a snapshot: the delta names every topic whose entry differs from the one held before."""
        topics = {str(t["name"]): t for t in image["topics"]}
        brokers = {int(b["broker_id"]): b for b in image["brokers"]}
        acls = list(image.get("acls", []))
        scram = list(image.get("scram_credentials", []))
        changed: dict[str, dict[str, Any] | None] = {name: None for name in self.topics if name not in topics}
        for name, t in topics.items():
            if self.topics.get(name) != t:
                changed[name] = t
        delta = MetadataDelta(changed, brokers != self.brokers, acls != self.acls, scram != self.scram_credentials,
                              snapshot=True)
        self.version = int(image["version"])
        self.cluster_id = str(image.get("cluster_id", self.cluster_id))
        self.counters = {k: int(image.get(k, v)) for k, v in self.counters.items()}
        self.topics, self.brokers, self.acls, self.scram_credentials = topics, brokers, acls, scram
        return delta

    def apply(self, deltas: Sequence[dict[str, Any]]) -> MetadataDelta:
        """Apply the deltas after :attr:`version` (those at or below it are skipped: another reply brought them
        already). Raises :class:`MetadataGapError` when the first new delta does not follow :attr:`version`."""
        pending = [d for d in deltas if int(d["version"]) > self.version]
        expected = self.version + 1
        for delta in pending:
            version = int(delta["version"])
            if version != expected:
                raise MetadataGapError(f"metadata delta {version} does not follow version {expected - 1}; "
                                       f"fetch the whole image")
            unknown = sorted({str(kind) for kind, _, _ in delta["entries"] if kind not in _ENTRY_APPLIERS})
            if unknown:
                raise MetadataGapError(f"metadata delta {version} has entries of unknown kinds {unknown}; fetch "
                                       f"the whole image")
            expected += 1
        out = MetadataDelta()
        for delta in pending:  # checked first: a gap leaves the image as it was
            for kind, key, value in delta["entries"]:
                _ENTRY_APPLIERS[kind](self, out, str(key), value)
            self.version = int(delta["version"])
        return out


def _apply_topic(image: MetadataImage, out: MetadataDelta, key: str, value: Any) -> None:
    if value is None:
        image.topics.pop(key, None)
    else:
        image.topics[key] = value
    out.topics[key] = value


def _apply_broker(image: MetadataImage, out: MetadataDelta, key: str, value: Any) -> None:
    if value is None:
        image.brokers.pop(int(key), None)
    else:
        image.brokers[int(key)] = value
    out.brokers = True


def _apply_counters(image: MetadataImage, out: MetadataDelta, key: str, value: Any) -> None:
    image.counters = {k: int(value.get(k, v)) for k, v in image.counters.items()}


def _apply_acls(image: MetadataImage, out: MetadataDelta, key: str, value: Any) -> None:
    image.acls = list(value or [])
    out.acls = True


def _apply_scram_credentials(image: MetadataImage, out: MetadataDelta, key: str, value: Any) -> None:
    image.scram_credentials = list(value or [])
    out.scram_credentials = True


#: how a broker applies each kind of entry of :data:`mini_broker.cluster.controller_state.ENTRY_KINDS`
_ENTRY_APPLIERS: dict[str, Callable[[MetadataImage, MetadataDelta, str, Any], None]] = {
    "topic": _apply_topic,
    "broker": _apply_broker,
    "counters": _apply_counters,
    "acls": _apply_acls,
    "scram_credentials": _apply_scram_credentials,
}
