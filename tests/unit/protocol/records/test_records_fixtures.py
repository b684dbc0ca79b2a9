"""Checked-in batches written by an independent encoder (tools/make_record_fixtures.py, kafka-python)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pykafka_client.protocol.compression import XERIAL_MAGIC, CompressionType
from pykafka_client.protocol.records import DefaultRecordBatch, LegacyRecordBatch, MemoryRecords

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "records"
MANIFEST: dict[str, dict[str, Any]] = json.loads((FIXTURES / "manifest.json").read_text())


def _unhex(v: str | None) -> bytes | None:
    return None if v is None else bytes.fromhex(v)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_fixture_decodes_to_the_manifest(name: str) -> None:
    meta = MANIFEST[name]
    raw = (FIXTURES / name).read_bytes()
    records = MemoryRecords(raw, check_crcs=True)
    batches = list(records.batches())
    assert batches, name
    for batch in batches:
        assert batch.magic == meta["magic"]
        assert batch.compression_type == CompressionType[meta["compression"].upper()]
        assert batch.is_valid()
    got = list(records.records())
    expected = meta["records"]
    assert len(got) == len(expected)
    for r, e in zip(got, expected, strict=True):
        assert r.offset == e["offset"]
        assert r.timestamp == e["timestamp"]
        assert r.key == _unhex(e["key"])
        assert r.value == _unhex(e["value"])
        assert r.headers == [(k, _unhex(v)) for k, v in e["headers"]]
    if meta["magic"] == 2:
        (batch,) = batches
        assert isinstance(batch, DefaultRecordBatch)
        assert batch.is_transactional == meta["transactional"]
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
            meta["producer_id"],
            meta["producer_epoch"],
            meta["base_sequence"],
        )
        assert batch.max_timestamp == meta["max_timestamp"]
        assert batch.last_offset_delta == len(expected) - 1
    else:
        assert all(isinstance(b, LegacyRecordBatch) for b in batches)


def test_snappy_fixture_uses_xerial_framing_and_lz4_fixture_a_frame() -> None:
    snappy = DefaultRecordBatch((FIXTURES / "v2_snappy_xerial.bin").read_bytes())
    assert bytes(snappy.raw_records()[:8]) == XERIAL_MAGIC
    lz4 = DefaultRecordBatch((FIXTURES / "v2_lz4_frame.bin").read_bytes())
    assert bytes(lz4.raw_records()[:4]) == b"\x04\x22\x4d\x18"
