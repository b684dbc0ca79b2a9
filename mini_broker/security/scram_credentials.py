"""SCRAM credentials the broker authenticates against (Kafka keeps them as ``UserScramCredentialsRecord`` in the
cluster metadata). Only salted keys are stored, never a password: per user and mechanism the salt, the
iteration count, ``StoredKey = H(ClientKey)`` and ``ServerKey`` (RFC 5802).

Persisted in ``<data dir>/__scram_credentials.json`` through :func:`mini_broker.utils.atomic_file.atomic_write`
on every change and read back at start, so credentials survive a restart. Thread-safe: the SASL
authenticators of the network threads read while AlterUserScramCredentials writes on a handler thread.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.network.transport.sasl.scram import ScramCredential, ScramMechanism, client_key, h, server_key

FILE_NAME = "__scram_credentials.json"
#: Kafka's upper bound on iterations (``ScramMechanism.maxIterations``)
MAX_ITERATIONS = 16384
#: The mechanism type ids of the AlterUserScramCredentials / DescribeUserScramCredentials APIs
MECHANISM_TYPES: dict[int, ScramMechanism] = {1: ScramMechanism.SCRAM_SHA_256, 2: ScramMechanism.SCRAM_SHA_512}
MECHANISM_TYPE_IDS: dict[ScramMechanism, int] = {m: t for t, m in MECHANISM_TYPES.items()}


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
        if self._path is not None and os.path.exists(self._path):
            self._load(self._path)

    def _load(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        for entry in data.get("credentials", []):
            mechanism = ScramMechanism.for_mechanism_name(str(entry["mechanism"]))
            if mechanism is None:
                continue
            self._credentials[(str(entry["user"]), mechanism)] = ScramCredential(
                salt=base64.b64decode(entry["salt"]), stored_key=base64.b64decode(entry["stored_key"]),
                server_key=base64.b64decode(entry["server_key"]), iterations=int(entry["iterations"]))

    def _persist(self) -> None:
        if self._path is None:
            return
        entries = [{"user": user, "mechanism": mechanism.mechanism_name, "iterations": c.iterations,
                    "salt": base64.b64encode(c.salt).decode(), "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode()}
                   for (user, mechanism), c in sorted(self._credentials.items(), key=lambda kv: (kv[0][0], kv[0][1].name))]
        atomic_write(self._path, json.dumps({"version": 1, "credentials": entries}, indent=1).encode())

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
        """Upsert and delete in one persisted change."""
        with self._lock:
            for key in deletions:
                self._credentials.pop(key, None)
            self._credentials.update(upserts)
            self._persist()

    def upsert_password(self, user: str, mechanism: ScramMechanism, password: str, iterations: int = 4096) -> None:
        """Store a credential derived from ``password`` (tests and the broker's own bootstrap users)."""
        self.apply({(user, mechanism): ScramCredential.from_password(mechanism, password, iterations)}, [])
