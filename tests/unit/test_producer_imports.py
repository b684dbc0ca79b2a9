"""A producer-only program loads no more than a producer needs (peak RSS, issue #27): importing the sync or the
async producer does not load the compression codecs (cramjam, ~3 MiB, imported on the first compressed batch),
the pure-Python encoder's varint tables (~1.7 MiB, built on its first use), the ``crc32c`` package's ``__init__``
(it reads its version through importlib.metadata, ~2.5 MiB: the compiled function is loaded alone), SASL (~1 MiB
with hashlib, imported with a SASL channel) or, for ``pykafka_client.aio``, the async consumer, share consumer and
admin client (~8 MiB with their protocol messages). Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "from pykafka_client.protocol.records import builder\n"
    "print(json.dumps({'modules': sorted(sys.modules), 'varint_tables': builder._VARINT_TABLES is not None}))\n"
)


def _loaded(module: str) -> tuple[set[str], bool]:
    out = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True, text=True, timeout=120, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return set(res["modules"]), bool(res["varint_tables"])


@pytest.mark.parametrize("module", ["pykafka_client.producer.kafka_producer", "pykafka_client.aio.producer"])
def test_importing_a_producer_loads_neither_codecs_nor_varint_tables(module: str) -> None:
    modules, tables = _loaded(module)
    assert "cramjam" not in modules
    assert not tables
    assert not {"crc32c", "importlib.metadata", "hashlib"} & modules
    assert not {m for m in modules if m.startswith("pykafka_client.network.transport.sasl")}


def test_importing_the_async_producer_loads_no_consumer_or_admin_client() -> None:
    modules, _ = _loaded("pykafka_client.aio.producer")
    assert not {
        "pykafka_client.aio.admin", "pykafka_client.aio.consumer", "pykafka_client.aio.share_consumer",
        "pykafka_client.consumer.kafka_consumer", "pykafka_client.admin.admin_client",
    } & modules


def test_the_async_package_still_exports_every_client() -> None:
    import pykafka_client.aio as aio

    for name in aio.__all__:
        assert getattr(aio, name).__name__ == name
    with pytest.raises(AttributeError):
        aio.NoSuchClient  # noqa: B018


def test_codecs_and_tables_load_on_first_use() -> None:
    from pykafka_client.protocol import compression
    from pykafka_client.protocol.compression import CompressionType
    from pykafka_client.protocol.records import builder
    from pykafka_client.protocol.records.varint import encode_varint

    data = b"abc" * 1000
    for codec in CompressionType:
        assert compression.decompress(codec, compression.compress(codec, data)) == data
    cache, small = builder._varint_tables()
    assert cache[-1] == encode_varint(-1) and small[300] == encode_varint(300)
    assert len(cache) == (1 << 14) + 1 and len(small) == 1 << 14


def test_crc32c_is_the_packages_function() -> None:
    import crc32c as package

    from pykafka_client.protocol.records import crc

    assert crc.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    for data in (b"", b"x" * 1000, bytearray(b"abc" * 77), memoryview(bytes(range(256)))[3:200]):
        assert crc.crc32c(data) == package.crc32c(data)
    assert crc._load() is package.crc32c  # the package imported already: its own function
    alone = crc._load_extension_alone()  # what a process that has not imported the package uses
    assert alone is not None and alone(b"123456789") == 0xE3069283


def test_crc32c_falls_back_to_the_package_when_its_layout_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    import crc32c as package

    from pykafka_client.protocol.records import crc

    monkeypatch.delitem(sys.modules, "crc32c")
    monkeypatch.setattr(crc, "_load_extension_alone", lambda: None)
    assert crc._load() is sys.modules["crc32c"].crc32c
    assert sys.modules["crc32c"] is not package  # imported anew
