"""SCRAM credentials the broker authenticates against (Kafka keeps them as ``UserScramCredentialsRecord`` in the
cluster metadata). Only salted keys are stored, never a password: per user and mechanism the salt, the
iteration count, ``StoredKey = H(ClientKey)`` and ``ServerKey`` (RFC 5802).

A single broker persists them in ``<data dir>/__scram_credentials.json`` through
:func:`mini_broker.utils.atomic_file.atomic_write` on every change and reads them back at start, so credentials
survive a restart. A cluster broker (:meth:`ScramCredentialStore.replicate_with`) sends every change to the
controller instead, which keeps the credentials in its persisted metadata image; each broker applies the image's
credentials (:meth:`ScramCredentialStore.apply_replicated`), so a credential created through one broker
authenticates on all of them and survives restarts. Thread-safe: the SASL authenticators of the network threads
read while AlterUserScramCredentials writes on a handler thread.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.network.transport.sasl.scram import ScramCredential, ScramMechanism, client_key, h, server_key

FILE_NAME = "__scram_credentials.json"
#: Kafka's upper bound on iterations (``ScramMechanism.maxIterations``)
MAX_ITERATIONS = 16384
#: The mechanism type ids of the AlterUserScramCredentials / DescribeUserScramCredentials APIs
MECHANISM_TYPES: dict[int, ScramMechanism] = {1: ScramMechanism.SCRAM_SHA_256, 2: ScramMechanism.SCRAM_SHA_512}
MECHANISM_TYPE_IDS: dict[ScramMechanism, int] = {m: t for t, m in MECHANISM_TYPES.items()}

#: Sends a change to the controller: (upserted credentials, deleted {"user", "mechanism"} keys), as JSON objects
Replicate = Callable[[list[dict[str, Any]], list[dict[str, str]]], None]


def credential_to_json(user: str, mechanism: ScramMechanism, c: ScramCredential) -> dict[str, Any]:
    """The stored form of one credential (in the data dir's file and the controller's image)."""
    return {"user": user, "mechanism": mechanism.mechanism_name, "iterations": c.iterations,
            "salt": base64.b64encode(c.salt).decode(), "stored_key": base64.b64encode(c.stored_key).decode(),
            "server_key": base64.b64encode(c.server_key).decode()}


def credentials_from_json(entries: list[dict[str, Any]]) -> dict[tuple[str, ScramMechanism], ScramCredential]:
    """Credentials of stored entries (an unknown mechanism is skipped)."""
    out: dict[tuple[str, ScramMechanism], ScramCredential] = {}
    for entry in entries:
        mechanism = ScramMechanism.for_mechanism_name(str(entry["mechanism"]))
        if mechanism is None:
            continue
        out[(str(entry["user"]), mechanism)] = ScramCredential(
            salt=base64.b64decode(entry["salt"]), stored_key=base64.b64decode(entry["stored_key"]),
            server_key=base64.b64decode(entry["server_key"]), iterations=int(entry["iterations"]))
    return out


def credential_from_salted_password(mechanism: ScramMechanism, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """The stored form of a salted password (what AlterUserScramCredentials carries)."""
    return ScramCredential(salt=salt, stored_key=h(mechanism, client_key(mechanism, salted_password)),
                           server_key=server_key(mechanism, salted_password), iterations=iterations)


@dataclass(frozen=True)
class CredentialInfo:
    """What DescribeUserScramCredentials tells about a credential (no key material)."""

    mechanism: ScramMechanism
    iterations: int


class _MechanismView(Mapping[str, ScramCredential]):
    """user -> credential of one mechanism, read live from the store (what the SCRAM server looks up)."""

    def __init__(self, store: ScramCredentialStore, mechanism: ScramMechanism) -> None:
        self._store = store
        self._mechanism = mechanism

    def __getitem__(self, user: str) -> ScramCredential:
        credential = self._store.get(user, self._mechanism)
        if credential is None:
            raise KeyError(user)
        return credential

    def __iter__(self) -> Iterator[str]:
        return iter(self._store.users(self._mechanism))

    def __len__(self) -> int:
        return len(self._store.users(self._mechanism))


class ScramCredentialStore:
    """Credentials by (user, mechanism); persisted in ``directory`` when given (None: memory only)."""

    def __init__(self, directory: str | None = None) -> None:
        self._path = os.path.join(directory, FILE_NAME) if directory is not None else None
        self._lock = threading.Lock()
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}
        self._replicate: Replicate | None = None
        if self._path is not None and os.path.exists(self._path):
            self._load(self._path)

    def _load(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        self._credentials.update(credentials_from_json(list(data.get("credentials", []))))

    def _entries(self) -> list[dict[str, Any]]:
        return [credential_to_json(user, mechanism, c) for (user, mechanism), c
                in sorted(self._credentials.items(), key=lambda kv: (kv[0][0], kv[0][1].name))]

    def _persist(self) -> None:
        if self._path is None:
            return
        atomic_write(self._path, json.dumps({"version": 1, "credentials": self._entries()}, indent=1).encode())

    # --- reads -------------------------------------------------------------------------------------

    def get(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        with self._lock:
            return self._credentials.get((user, mechanism))

    def users(self, mechanism: ScramMechanism | None = None) -> list[str]:
        with self._lock:
            return sorted({u for (u, m) in self._credentials if mechanism is None or m is mechanism})

    def describe(self, user: str) -> list[CredentialInfo]:
        with self._lock:
            return [CredentialInfo(m, c.iterations) for (u, m), c in sorted(self._credentials.items(),
                                                                            key=lambda kv: kv[0][1].name) if u == user]

    def view(self, mechanism: ScramMechanism) -> Mapping[str, ScramCredential]:
        """A live user -> credential mapping for one mechanism (for the SCRAM server)."""
        return _MechanismView(self, mechanism)

    # --- writes ------------------------------------------------------------------------------------

    def apply(self, upserts: Mapping[tuple[str, ScramMechanism], ScramCredential],
              deletions: list[tuple[str, ScramMechanism]]) -> None:
        """Upsert and delete in one persisted change (on a cluster: one change sent to the controller, in force
        once its image is applied; raises what the controller raised)."""
        replicate = self._replicate
        if replicate is not None:
            if upserts or deletions:
                replicate([credential_to_json(u, m, c) for (u, m), c in upserts.items()],
                          [{"user": u, "mechanism": m.mechanism_name} for u, m in deletions])
            return
        with self._lock:
            for key in deletions:
                self._credentials.pop(key, None)
            self._credentials.update(upserts)
            self._persist()

    def upsert_password(self, user: str, mechanism: ScramMechanism, password: str, iterations: int = 4096) -> None:
        """Store a credential derived from ``password`` (tests and the broker's own bootstrap users)."""
        self.apply({(user, mechanism): ScramCredential.from_password(mechanism, password, iterations)}, [])

    # --- replication (a cluster broker) ------------------------------------------------------------

    def replicate_with(self, replicate: Replicate) -> None:
        """Send changes through ``replicate`` (the controller) instead of writing the data dir's file; the
        credentials are then those of the controller's image (:meth:`apply_replicated`)."""
        with self._lock:
            self._replicate = replicate
            self._path = None
            self._credentials = {}

    def apply_replicated(self, entries: list[dict[str, Any]]) -> None:
        """The credentials of the controller's metadata image (all of them) replace this broker's."""
        credentials = credentials_from_json(entries)
        with self._lock:
            self._credentials = credentials
