"""compression.py: codec round trips, wire formats Java reads, bounded decompression."""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame  # type: ignore[import-untyped]
import pytest
import zstandard

from pykafka_client.errors import CorruptRecordError, UnsupportedCompressionTypeError
from pykafka_client.protocol import compression
from pykafka_client.protocol.compression import (
    LZ4_FRAME_MAGIC,
    XERIAL_MAGIC,
    CompressionType,
    compress,
    decompress,
    get_max_decompressed_size,
    set_max_decompressed_size,
)

PAYLOADS = [b"", b"a", os.urandom(1000), b"kafka" * 50_000, os.urandom(70_000) + b"\x00" * 200_000]


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("size_index", range(len(PAYLOADS)))
def test_round_trip(codec: CompressionType, size_index: int) -> None:
    data = PAYLOADS[size_index]
    assert decompress(codec, compress(codec, data)) == data


def test_codec_ids_and_names() -> None:
    assert [int(c) for c in CompressionType] == [0, 1, 2, 3, 4]
    assert CompressionType.for_name("zstd") == CompressionType.ZSTD
    assert CompressionType.LZ4.config_name == "lz4"
    for bad in (5, 6, 7):
        with pytest.raises(UnsupportedCompressionTypeError):
            CompressionType.for_id(bad)
    with pytest.raises(UnsupportedCompressionTypeError):
        CompressionType.for_name("brotli")


def test_snappy_writes_xerial_framing_and_reads_raw_too() -> None:
    data = b"0123456789" * 10_000
    framed = compress(CompressionType.SNAPPY, data)
    assert framed[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", framed[8:16]) == (1, 1)
    # blocks of at most 32 KiB of input, like Java's SnappyOutputStream
    first_block_len = struct.unpack(">i", framed[16:20])[0]
    assert cramjam.snappy.decompress_raw_len(framed[20 : 20 + first_block_len]) == 32 * 1024
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_lz4_frame_layout_matches_java() -> None:
    data = os.urandom(100) * 2000
    frame = compress(CompressionType.LZ4, data)
    assert struct.unpack("<I", frame[:4])[0] == LZ4_FRAME_MAGIC
    flg, bd = frame[4], frame[5]
    assert flg == 0x60  # version 01, independent blocks, no checksums, no content size
    assert bd == 0x40  # 64 KiB blocks
    assert frame[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum
    # an independent LZ4 implementation reads it
    assert lz4.frame.decompress(frame) == data


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"block_linked": True, "content_checksum": True},
        {"block_linked": False, "block_checksum": True, "store_size": False},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
    ],
)
def test_lz4_reads_frames_written_with_other_settings(kwargs: dict[str, object]) -> None:
    data = os.urandom(5000) * 40
    assert decompress(CompressionType.LZ4, lz4.frame.compress(data, **kwargs)) == data


def test_lz4_legacy_v0_header_checksum_is_accepted_only_when_asked() -> None:
    data = b"old kafka" * 100
    frame = bytearray(compress(CompressionType.LZ4, data))
    # pre-0.10 Kafka hashed the magic bytes into the header checksum
    frame[6] = (compression._xxh32(bytes(frame[0:6])) >> 8) & 0xFF
    assert decompress(CompressionType.LZ4, bytes(frame), legacy_v0_lz4=True) == data
    with pytest.raises(CorruptRecordError, match="checksum"):
        decompress(CompressionType.LZ4, bytes(frame))


def test_xxh32_known_values() -> None:
    assert compression._xxh32(b"") == 0x02CC5D05
    assert compression._xxh32(b"a") == 0x550D7456
    assert compression._xxh32(b"abc") == 0x32D153FF
    assert compression._xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_zstd_and_gzip_interop() -> None:
    data = os.urandom(3000) * 30
    assert zstandard.ZstdDecompressor().decompress(compress(CompressionType.ZSTD, data)) == data
    # a streamed zstd frame has no content size in its header
    cobj = zstandard.ZstdCompressor().compressobj()
    streamed = cobj.compress(data) + cobj.flush()
    assert decompress(CompressionType.ZSTD, streamed) == data
    assert gzip.decompress(compress(CompressionType.GZIP, data)) == data
    # concatenated gzip members are one stream
    assert decompress(CompressionType.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


@pytest.mark.parametrize("codec", [c for c in CompressionType if c != CompressionType.NONE])
def test_corrupt_payloads_raise_corrupt_record_error(codec: CompressionType) -> None:
    good = compress(codec, b"some data to compress " * 100)
    for bad in (b"", b"\x00" * 20, good[: len(good) // 2], good[:8] + bytes(b ^ 0x5A for b in good[8:])):
        with pytest.raises(CorruptRecordError):
            decompress(codec, bad)


def _bombs(size: int) -> dict[CompressionType, bytes]:
    """Payloads that expand to ``size`` bytes, built without materialising ``size`` bytes."""
    chunk = b"\x00" * (1 << 16)
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    gz_parts = [gz.compress(chunk) for _ in range(size // len(chunk))]
    zc = zstandard.ZstdCompressor().compressobj()
    z_parts = [zc.compress(chunk) for _ in range(size // len(chunk))]
    snappy_block = bytes(cramjam.snappy.compress_raw(chunk[: 32 * 1024]))
    snappy = (
        XERIAL_MAGIC
        + struct.pack(">ii", 1, 1)
        + (struct.pack(">i", len(snappy_block)) + snappy_block) * (size // (32 * 1024))
    )
    lz4_one = compress(CompressionType.LZ4, chunk)  # header + one 64 KiB block + end mark
    lz4_block = lz4_one[7:-4]
    lz4_bomb = lz4_one[:7] + lz4_block * (size // len(chunk)) + b"\x00\x00\x00\x00"
    return {
        CompressionType.GZIP: b"".join(gz_parts) + gz.flush(),
        CompressionType.ZSTD: b"".join(z_parts) + zc.flush(),
        CompressionType.SNAPPY: snappy,
        CompressionType.LZ4: lz4_bomb,
    }


BOMB_SIZE = 64 << 20
LIMIT = 1 << 20


@pytest.fixture(scope="module")
def bombs() -> dict[CompressionType, bytes]:
    return _bombs(BOMB_SIZE)


@pytest.mark.parametrize(
    "codec", [CompressionType.GZIP, CompressionType.ZSTD, CompressionType.SNAPPY, CompressionType.LZ4]
)
def test_decompression_bomb_is_bounded(codec: CompressionType, bombs: dict[CompressionType, bytes]) -> None:
    payload = bombs[codec]
    assert len(payload) < BOMB_SIZE // 16  # snappy's best ratio is about 21:1
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError, match="limit"):
            decompress(codec, payload, LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * LIMIT + 4 * len(payload)


def test_zstd_lying_content_size_is_rejected_before_allocating() -> None:
    frame = bytearray(compress(CompressionType.ZSTD, b"x" * 1000))
    # FHD with an 8-byte frame content size field, single segment
    fhd = 0xE0
    huge = bytes(frame[:4]) + bytes([fhd]) + struct.pack("<Q", 1 << 40) + bytes(frame[10:])
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(CompressionType.ZSTD, huge, LIMIT)


def test_snappy_lying_length_header_is_rejected() -> None:
    raw = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # declares 4 GiB
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, raw, LIMIT)


def test_the_default_limit_is_configurable() -> None:
    before = get_max_decompressed_size()
    try:
        set_max_decompressed_size(1000)
        with pytest.raises(CorruptRecordError, match="1000-byte limit"):
            decompress(CompressionType.GZIP, compress(CompressionType.GZIP, b"a" * 1001))
        assert decompress(CompressionType.GZIP, compress(CompressionType.GZIP, b"a" * 1000)) == b"a" * 1000
        with pytest.raises(ValueError):
            set_max_decompressed_size(0)
    finally:
        set_max_decompressed_size(before)


def _peak_bytes(fn: object) -> int:
    tracemalloc.start()
    try:
        try:
            fn()  # type: ignore[operator]
        except CorruptRecordError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_declared_sizes_below_the_limit_are_not_trusted_either() -> None:
    # zstd: a 1000-byte frame that claims 200 MB (under the default limit) must not get a 200 MB buffer
    frame = compress(CompressionType.ZSTD, b"x" * 1000)
    assert frame[4] == 0x60  # single segment, 2-byte content size
    liar = bytes(frame[:4]) + bytes([0xE0]) + struct.pack("<Q", 100 << 20) + bytes(frame[4 + 1 + 2 :])
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.ZSTD, liar)
    assert _peak_bytes(lambda: decompress(CompressionType.ZSTD, liar)) < 4 << 20
    # snappy: 20 bytes cannot expand to 10 MB
    raw = bytes([0x80, 0x80, 0x80, 0x05]) + b"\x00" * 16
    with pytest.raises(CorruptRecordError, match="declares"):
        decompress(CompressionType.SNAPPY, raw)
    # lz4: a short frame claiming 4 MiB blocks gets a buffer sized by what it could expand to
    small = bytearray(compress(CompressionType.LZ4, b"y" * 100))
    small[5] = 0x70  # BD: 4 MiB blocks
    small[6] = (compression._xxh32(bytes(small[4:6])) >> 8) & 0xFF
    assert decompress(CompressionType.LZ4, bytes(small)) == b"y" * 100
    assert _peak_bytes(lambda: decompress(CompressionType.LZ4, bytes(small))) < 1 << 20


def test_zstd_output_larger_than_the_first_guess_grows_the_buffer() -> None:
    data = b"\x00" * (5 << 20)
    cobj = zstandard.ZstdCompressor().compressobj()
    streamed = cobj.compress(data) + cobj.flush()  # no content size in the header
    assert decompress(CompressionType.ZSTD, streamed) == data
