"""Record batch compression codecs (Java ``CompressionType`` and its stream wrappers), via cramjam.

Wire formats, chosen for compatibility with the Java client and librdkafka:

* GZIP: RFC 1952 gzip; concatenated members are read.
* SNAPPY: written with xerial framing (what Java's ``SnappyOutputStream`` emits: the 16-byte
  ``\\x82SNAPPY\\x00`` header, then blocks of ``int32 length`` + raw snappy). Read: xerial or raw snappy.
* LZ4: the LZ4 frame format as Java writes it (independent 64 KiB blocks, no checksums besides the
  header checksum). Read: any LZ4 frame (block and content checksums are skipped, not verified: the
  batch CRC covers the payload); for magic v0 message sets the header checksum is ignored, as Java
  does, because Kafka before 0.10 computed it wrongly (``legacy_v0_lz4=True``).
* ZSTD: a standard zstd frame.

Decompression is bounded: output larger than ``max_output_size`` (default
:data:`DEFAULT_MAX_DECOMPRESSED_SIZE`, changeable with :func:`set_max_decompressed_size`) raises
:class:`~pykafka_client.errors.CorruptRecordError` without materialising it, so a decompression bomb
cannot exhaust memory. Corrupt input raises ``CorruptRecordError``; an unknown codec id raises
:class:`~pykafka_client.errors.UnsupportedCompressionTypeError`.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

from pykafka_client.errors import CorruptRecordError, UnsupportedCompressionTypeError

Buffer = bytes | bytearray | memoryview

#: Default cap on the decompressed size of one batch (256 MiB).
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
_max_decompressed_size = DEFAULT_MAX_DECOMPRESSED_SIZE


def set_max_decompressed_size(limit: int) -> None:
    """Change the process-wide default cap on decompressed batch size (bytes, > 0)."""
    global _max_decompressed_size
    if limit <= 0:
        raise ValueError(f"max decompressed size must be positive, got {limit}")
    _max_decompressed_size = limit


def get_max_decompressed_size() -> int:
    """The current process-wide default cap on decompressed batch size."""
    return _max_decompressed_size


class CompressionType(IntEnum):
    """Codec ids as stored in the low 3 bits of a batch's attributes (Java ``CompressionType``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def for_id(cls, codec_id: int) -> CompressionType:
        """The codec for an attributes id; ids 5-7 raise ``UnsupportedCompressionTypeError``."""
        try:
            return cls(codec_id)
        except ValueError:
            raise UnsupportedCompressionTypeError(f"unknown compression type id {codec_id}") from None

    @classmethod
    def for_name(cls, name: str) -> CompressionType:
        """The codec for a ``compression.type`` config value (``none``, ``gzip``, ...)."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise UnsupportedCompressionTypeError(f"unknown compression type name {name!r}") from None

    @property
    def config_name(self) -> str:
        return self.name.lower()


def compress(codec: CompressionType, data: Buffer, level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec`` in the wire format Java expects (see the module docstring)."""
    if codec == CompressionType.NONE:
        return bytes(data)
    import cramjam  # on first use: an uncompressed producer or consumer never loads the codecs (~3 MiB RSS)

    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data, level=6 if level is None else level))
    if codec == CompressionType.SNAPPY:
        return xerial_snappy_compress(data)
    if codec == CompressionType.LZ4:
        return lz4_frame_compress(data)
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))
    raise UnsupportedCompressionTypeError(f"unknown compression type {codec!r}")


def decompress(
    codec: CompressionType,
    data: Buffer,
    max_output_size: int | None = None,
    *,
    legacy_v0_lz4: bool = False,
) -> bytes:
    """Decompress one batch payload, producing at most ``max_output_size`` bytes (else CorruptRecordError)."""
    limit = _max_decompressed_size if max_output_size is None else max_output_size
    if codec == CompressionType.NONE:
        if len(data) > limit:
            raise CorruptRecordError(f"payload of {len(data)} bytes exceeds the {limit}-byte limit")
        return bytes(data)
    import cramjam  # on first use, as in compress

    try:
        if codec == CompressionType.GZIP:
            return _gzip_decompress(data, limit)
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(data, limit)
        if codec == CompressionType.LZ4:
            return _lz4_frame_decompress(data, limit, legacy_v0_lz4)
        if codec == CompressionType.ZSTD:
            return _zstd_decompress(data, limit)
    except (cramjam.DecompressionError, zlib.error, struct.error) as e:
        raise CorruptRecordError(f"corrupt {codec.name} payload: {e}") from None
    raise UnsupportedCompressionTypeError(f"unknown compression type {codec!r}")


def _too_big(codec: str, limit: int) -> CorruptRecordError:
    return CorruptRecordError(f"{codec} payload decompresses to more than the {limit}-byte limit")


# --- gzip ------------------------------------------------------------------------------------


def _gzip_decompress(data: Buffer, limit: int) -> bytes:
    out: list[bytes] = []
    total = 0
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(wbits=31)
        chunk = d.decompress(rest, limit + 1 - total)
        total += len(chunk)
        if total > limit or d.unconsumed_tail:
            raise _too_big("GZIP", limit)
        out.append(chunk)
        if not d.eof:
            raise CorruptRecordError("truncated GZIP payload")
        rest = d.unused_data
        if not rest:
            return b"".join(out)


# --- snappy ------------------------------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
#: Java's SnappyOutputStream block size.
XERIAL_BLOCK_SIZE = 32 * 1024


def xerial_snappy_compress(data: Buffer, block_size: int = XERIAL_BLOCK_SIZE) -> bytes:
    """Snappy with xerial framing, as Java's ``SnappyOutputStream`` writes it."""
    import cramjam  # on first use (see compress)

    view = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    pack = struct.Struct(">i").pack
    for start in range(0, len(view), block_size):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + block_size]))
        parts.append(pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: Buffer, limit: int) -> bytes:
    import cramjam  # on first use (see compress)

    view = memoryview(data).cast("B")
    if len(view) >= 16 and view[:8] == XERIAL_MAGIC:
        out: list[bytes] = []
        total = 0
        pos = 16
        n = len(view)
        while pos < n:
            if pos + 4 > n:
                raise CorruptRecordError("truncated xerial snappy block length")
            (size,) = struct.unpack_from(">i", view, pos)
            pos += 4
            if size < 0 or pos + size > n:
                raise CorruptRecordError(f"xerial snappy block length {size} exceeds the {n - pos} bytes left")
            block = view[pos : pos + size]
            pos += size
            total += _snappy_raw_len(block)
            if total > limit:
                raise _too_big("SNAPPY", limit)
            out.append(bytes(cramjam.snappy.decompress_raw(block)))
        return b"".join(out)
    if _snappy_raw_len(view) > limit:
        raise _too_big("SNAPPY", limit)
    return bytes(cramjam.snappy.decompress_raw(view))


#: No snappy element expands more than 64 bytes out of 3 bytes in; a larger declared length is a lie.
_SNAPPY_MAX_RATIO = 22


def _snappy_raw_len(block: memoryview) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint), checked for plausibility."""
    declared = _snappy_declared_len(block)
    if declared > _SNAPPY_MAX_RATIO * len(block) + 64:
        raise CorruptRecordError(f"snappy block of {len(block)} bytes declares {declared} uncompressed bytes")
    return declared


def _snappy_declared_len(block: memoryview) -> int:
    result = 0
    shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
        shift += 7
    raise CorruptRecordError("invalid snappy length header")


# --- lz4 -------------------------------------------------------------------------------------

LZ4_FRAME_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_U32 = struct.Struct("<I")


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, used only for the few bytes of an LZ4 frame descriptor."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for j in range(4):
                lane = _U32.unpack_from(data, i + 4 * j)[0]
                v[j] = (rotl((v[j] + lane * p2) & m, 13) * p1) & m
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        h = (rotl((h + _U32.unpack_from(data, i)[0] * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


# FLG: version 01, independent blocks, no block/content checksum, no content size. BD: 64 KiB blocks.
_LZ4_FLG = 0x60
_LZ4_BD = 0x40
_LZ4_HEADER = _U32.pack(LZ4_FRAME_MAGIC) + bytes([_LZ4_FLG, _LZ4_BD, (_xxh32(bytes([_LZ4_FLG, _LZ4_BD])) >> 8) & 0xFF])
_LZ4_BLOCK_SIZE = 64 * 1024


def lz4_frame_compress(data: Buffer) -> bytes:
    """An LZ4 frame laid out as Java's ``KafkaLZ4BlockOutputStream`` writes it."""
    import cramjam  # on first use (see compress)

    view = memoryview(data).cast("B")
    parts = [_LZ4_HEADER]
    pack = _U32.pack
    for start in range(0, len(view), _LZ4_BLOCK_SIZE):
        raw = view[start : start + _LZ4_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(raw, store_size=False))
        if len(block) >= len(raw):
            parts.append(pack(len(raw) | 0x80000000))
            parts.append(bytes(raw))
        else:
            parts.append(pack(len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


def _lz4_frame_decompress(data: Buffer, limit: int, legacy_v0: bool) -> bytes:
    import cramjam  # on first use (see compress)

    view = memoryview(data).cast("B")
    n = len(view)
    if n < 7 or _U32.unpack_from(view, 0)[0] != LZ4_FRAME_MAGIC:
        raise CorruptRecordError("LZ4 payload does not start with the frame magic")
    flg = view[4]
    bd = view[5]
    if flg >> 6 != 1:
        raise CorruptRecordError(f"unsupported LZ4 frame version {flg >> 6}")
    independent = bool(flg & 0x20)
    block_checksum = bool(flg & 0x10)
    has_content_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    has_dict_id = bool(flg & 0x01)
    block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 0x7)
    if block_max is None:
        raise CorruptRecordError(f"invalid LZ4 block max size code in BD byte {bd:#x}")
    pos = 6
    content_size = -1
    if has_content_size:
        if pos + 8 > n:
            raise CorruptRecordError("truncated LZ4 frame descriptor")
        content_size = struct.unpack_from("<q", view, pos)[0]
        pos += 8
        if content_size > limit:
            raise _too_big("LZ4", limit)
    if has_dict_id:
        pos += 4
    if pos >= n:
        raise CorruptRecordError("truncated LZ4 frame descriptor")
    hc = view[pos]
    expected = (_xxh32(bytes(view[4:pos])) >> 8) & 0xFF
    # Kafka before 0.10 computed this checksum wrongly (KAFKA-3160): like Java, ignore it for magic v0.
    if hc != expected and not legacy_v0:
        raise CorruptRecordError("LZ4 frame header checksum mismatch")
    pos += 1
    if not independent:
        # Linked blocks cannot be decoded block by block; the whole frame goes to the library, which is only
        # safe while the worst-case expansion (255:1 for LZ4) fits the limit.
        if (n - pos) * 255 > limit:
            raise _too_big("LZ4", limit)
        fixed = bytearray(view)
        fixed[pos - 1] = expected
        return bytes(cramjam.lz4.decompress(fixed))
    out: list[bytes] = []
    total = 0
    # LZ4 expands at most 255:1, so a short frame never needs the full block size its header claims.
    scratch = bytearray(min(block_max, 255 * n + 64))
    while True:
        if pos + 4 > n:
            raise CorruptRecordError("truncated LZ4 frame: missing end mark")
        (word,) = _U32.unpack_from(view, pos)
        pos += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        if size > block_max or pos + size > n:
            raise CorruptRecordError(f"LZ4 block size {size} exceeds the block maximum or the bytes left")
        block = view[pos : pos + size]
        pos += size
        if block_checksum:
            pos += 4
        if word & 0x80000000:
            chunk = bytes(block)
        else:
            written = cramjam.lz4.decompress_block_into(block, scratch)
            chunk = bytes(memoryview(scratch)[:written])
        total += len(chunk)
        if total > limit:
            raise _too_big("LZ4", limit)
        out.append(chunk)
    if content_checksum:
        pos += 4
    if pos > n:
        raise CorruptRecordError("truncated LZ4 frame checksum")
    return b"".join(out)


# --- zstd ------------------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528


def _zstd_content_size(view: memoryview) -> int:
    """The decompressed size declared by the first zstd frame header, or -1 when absent."""
    if len(view) < 5 or _U32.unpack_from(view, 0)[0] != _ZSTD_MAGIC:
        raise CorruptRecordError("ZSTD payload does not start with the frame magic")
    fhd = view[4]
    fcs_flag = fhd >> 6
    single_segment = bool(fhd & 0x20)
    dict_id_size = (0, 1, 2, 4)[fhd & 0x3]
    pos = 5 + (0 if single_segment else 1) + dict_id_size
    size_len = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size_len == 0:
        return -1
    if pos + size_len > len(view):
        raise CorruptRecordError("truncated ZSTD frame header")
    value = int.from_bytes(view[pos : pos + size_len], "little")
    return value + 256 if size_len == 2 else value


def _zstd_decompress(data: Buffer, limit: int) -> bytes:
    import cramjam  # on first use (see compress)

    view = memoryview(data).cast("B")
    declared = _zstd_content_size(view)
    if declared > limit:
        raise _too_big("ZSTD", limit)
    # A small declared size is used as is; a large one is not trusted: the buffer only grows (x4) after the
    # previous one was really filled, so memory stays proportional to the output actually produced.
    size = max(64 * 1024, len(view) * 16)
    if declared >= 0:
        size = min(size, declared)
    size = min(size, limit)
    while True:
        # One spare byte tells "exactly fits" apart from "truncated output".
        out = bytearray(size + 1)
        try:
            written = cramjam.zstd.decompress_into(view, out)
        except cramjam.DecompressionError as e:
            if "write whole buffer" not in str(e):
                raise
            if size >= limit:
                raise _too_big("ZSTD", limit) from None
            size = min(limit, size * 4)
            continue
        if written > limit:
            raise _too_big("ZSTD", limit)
        del out[written:]
        return bytes(out)
