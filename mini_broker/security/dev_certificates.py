"""A throwaway PKI for trying TLS locally (``mini-broker --generate-test-certificate DIR``): a CA and a broker
certificate it signed, valid for ``localhost`` and ``127.0.0.1``. Made with the ``openssl`` command (present
wherever Python's ``ssl`` module is usable; no Python dependency added to the package). Never use it in
production: the CA's key is thrown away, the broker's key is not encrypted.

Writes, in ``DIR``:

* ``ca.pem``: the CA certificate, what clients trust (``ssl.truststore.location`` with
  ``ssl.truststore.type=PEM``; librdkafka's ``ssl.ca.location``);
* ``broker.pem``: the broker's private key and certificate in one PEM file (``ssl.keystore.type=PEM``,
  ``ssl.keystore.location``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CA_FILE = "ca.pem"
KEYSTORE_FILE = "broker.pem"
VALID_DAYS = 365

_OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = mini_broker
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


@dataclass(frozen=True)
class DevCertificates:
    """Paths of what :func:`generate_test_certificates` wrote."""

    ca: Path
    keystore: Path


def generate_test_certificates(directory: str | os.PathLike[str], openssl: str = "openssl") -> DevCertificates:
    """Write ``ca.pem`` and ``broker.pem`` into ``directory`` (created if missing; existing files replaced).

    Raises RuntimeError naming the failed ``openssl`` step, or that ``openssl`` is not installed."""
    executable = shutil.which(openssl)
    if executable is None:
        raise RuntimeError(f"cannot generate a test certificate: the {openssl!r} command is not on PATH; install "
                           "OpenSSL, or give the broker your own PEM files (ssl.keystore.location)")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mini-broker-pki-") as tmp:
        work = Path(tmp)
        config = work / "openssl.cnf"
        config.write_text(_OPENSSL_CONFIG, encoding="utf-8")
        ca_key, ca_cert = work / "ca-key.pem", work / "ca.pem"
        key, csr, cert = work / "broker-key.pem", work / "broker.csr", work / "broker-cert.pem"
        days = str(VALID_DAYS)
        _openssl(executable, "create the test CA", "req", "-x509", "-new", "-newkey", "rsa:2048", "-nodes",
                 "-keyout", ca_key, "-out", ca_cert, "-days", days, "-config", config, "-extensions", "ca_ext",
                 "-subj", "/CN=mini_broker test CA")
        _openssl(executable, "create the broker's key", "req", "-new", "-newkey", "rsa:2048", "-nodes",
                 "-keyout", key, "-out", csr, "-config", config, "-subj", "/CN=localhost")
        _openssl(executable, "sign the broker's certificate", "x509", "-req", "-in", csr, "-CA", ca_cert,
                 "-CAkey", ca_key, "-set_serial", str(secrets.randbits(63)), "-out", cert, "-days", days,
                 "-extfile", config, "-extensions", "server_ext")
        keystore = out / KEYSTORE_FILE
        keystore.write_text(key.read_text(encoding="ascii") + cert.read_text(encoding="ascii"), encoding="ascii")
        keystore.chmod(0o600)
        ca = out / CA_FILE
        ca.write_text(ca_cert.read_text(encoding="ascii"), encoding="ascii")
    return DevCertificates(ca=ca, keystore=keystore)


def _openssl(executable: str, step: str, *args: str | Path) -> None:
    try:
        subprocess.run([executable, *map(str, args)], check=True, capture_output=True, text=True, timeout=60)
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"cannot generate a test certificate: openssl failed to {step} "
                           f"(exit {e.returncode}): {e.stderr.strip()[-500:]}") from e
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"cannot generate a test certificate: openssl did not {step} within 60 s") from e
