"""SCRAM credentials as cluster metadata: a cluster broker's store sends changes to the controller (nothing in
force, nothing on disk, until the image comes back), the controller's state upserts/deletes by (user, mechanism),
persists them in its image and loads them again, and applying the image replaces the broker's credentials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mini_broker.cluster.controller_state import ControllerState
from mini_broker.security.scram_credentials import FILE_NAME, ScramCredentialStore, credential_to_json
from pykafka_client.network.transport.sasl.scram import ScramCredential, ScramMechanism
from pykafka_client.utils.time import MockTime

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def test_store_replicates_through_the_controller_image(tmp_path: Path) -> None:
    time = MockTime()
    saved: list[dict[str, Any]] = []
    state = ControllerState("c1", time, 10_000, persist=saved.append)
    store = ScramCredentialStore(str(tmp_path))
    sent: list[tuple[list[dict[str, Any]], list[dict[str, str]]]] = []

    def replicate(upserted: list[dict[str, Any]], deleted: list[dict[str, str]]) -> None:
        sent.append((upserted, deleted))
        state.alter_scram_credentials(upserted, deleted)

    store.replicate_with(replicate)
    store.upsert_password("alice", SHA256, "pw")
    store.upsert_password("alice", SHA512, "pw5", iterations=8192)
    assert store.get("alice", SHA256) is None  # in force once the controller's image is applied
    assert not (tmp_path / FILE_NAME).exists()
    store.apply_replicated(state.image()["scram_credentials"])
    assert store.users() == ["alice"] and store.get("alice", SHA512) is not None
    assert [i.iterations for i in store.describe("alice")] == [4096, 8192]

    replaced = ScramCredential.from_password(SHA256, "new", 4096)
    store.apply({("alice", SHA256): replaced}, [("alice", SHA512)])
    assert sent[-1][1] == [{"user": "alice", "mechanism": "SCRAM-SHA-512"}]
    store.apply_replicated(state.image()["scram_credentials"])
    assert store.get("alice", SHA256) == replaced and store.get("alice", SHA512) is None
    assert state.image()["scram_credentials"] == [credential_to_json("alice", SHA256, replaced)]

    # persisted with the image (each change a delta naming the entry): a restarted controller replays them
    again = ControllerState("c1", time, 10_000)
    for delta in saved:
        again.replay(delta)
    assert again.scram_credentials == state.scram_credentials
    version = state.version
    store.apply({}, [])  # nothing to change sends nothing
    assert state.version == version and len(sent) == 3
