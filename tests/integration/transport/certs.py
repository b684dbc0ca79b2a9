"""Test PKI made with ``cryptography``: a self-signed CA, server certificates and a client certificate."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Pki:
    ca: Path
    server_cert: Path  # SAN IP:127.0.0.1, DNS:localhost
    server_key: Path
    wrong_host_cert: Path  # SAN DNS:broker.example.com only
    wrong_host_key: Path
    client_cert: Path
    client_key: Path  # encrypted with KEY_PASSWORD
    other_ca: Path  # a CA that signed nothing here


KEY_PASSWORD = "s3cret"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey, password: str | None = None) -> None:
    enc: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    )
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc))


def _ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, cn: str, sans: list[x509.GeneralName], server: bool
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def make_pki(directory: Path) -> Pki:
    ca, ca_key = _ca("pykafka test CA")
    other, _ = _ca("unrelated CA")
    server, server_key = _leaf(
        ca, ca_key, "localhost", [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")], True
    )
    wrong, wrong_key = _leaf(ca, ca_key, "broker.example.com", [x509.DNSName("broker.example.com")], True)
    client, client_key = _leaf(ca, ca_key, "client-1", [], False)
    pem = serialization.Encoding.PEM
    p = Pki(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        wrong_host_cert=directory / "wrong.pem",
        wrong_host_key=directory / "wrong.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca=directory / "other-ca.pem",
    )
    p.ca.write_bytes(ca.public_bytes(pem))
    p.other_ca.write_bytes(other.public_bytes(pem))
    p.server_cert.write_bytes(server.public_bytes(pem))
    _write_key(p.server_key, server_key)
    p.wrong_host_cert.write_bytes(wrong.public_bytes(pem))
    _write_key(p.wrong_host_key, wrong_key)
    p.client_cert.write_bytes(client.public_bytes(pem))
    _write_key(p.client_key, client_key, KEY_PASSWORD)
    return p
