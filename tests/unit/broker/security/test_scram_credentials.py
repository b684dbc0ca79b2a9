"""SCRAM on the broker: the stored credential from a salted password answers the RFC 7677 exchange; the store
persists across instances; AlterUserScramCredentials / DescribeUserScramCredentials validation."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from mini_broker.security.scram_credentials import ScramCredentialStore, credential_from_salted_password
from pykafka_client.network.transport.sasl.scram import ScramMechanism, ScramServer, hi

SHA256 = ScramMechanism.SCRAM_SHA_256
# RFC 7677 section 3
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_credential_from_salted_password_answers_rfc_7677() -> None:
    credential = credential_from_salted_password(SHA256, SALT, hi(SHA256, b"pencil", SALT, 4096), 4096)
    store = ScramCredentialStore()
    store.apply({("user", SHA256): credential}, [])
    server = ScramServer(SHA256, store.view(SHA256), nonce_generator=lambda: SERVER_NONCE)
    assert server.evaluate_response(CLIENT_FIRST) == SERVER_FIRST
    assert server.evaluate_response(CLIENT_FINAL) == SERVER_FINAL
    assert server.is_complete() and server.authorization_id() == "user"


def test_store_persists_and_reloads(tmp_path: Path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    store.upsert_password("alice", SHA256, "pw", 4096)
    store.upsert_password("alice", ScramMechanism.SCRAM_SHA_512, "pw", 8192)
    store.upsert_password("bob", SHA256, "pw2")
    store.apply({}, [("bob", SHA256)])
    again = ScramCredentialStore(str(tmp_path))
    assert again.users() == ["alice"]
    assert again.get("alice", SHA256) == store.get("alice", SHA256)
    assert [(i.mechanism, i.iterations) for i in again.describe("alice")] == [
        (SHA256, 4096), (ScramMechanism.SCRAM_SHA_512, 8192)]
    assert not {"pw", "pw2"} & _strings(json.loads((tmp_path / "__scram_credentials.json").read_text()))


def _strings(value: object) -> set[str]:
    """Every string in a JSON value, keys included (a password stored anywhere in it is found; a random
    base64 salt that happens to contain "pw" is not a password)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set(value) | {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return set()
