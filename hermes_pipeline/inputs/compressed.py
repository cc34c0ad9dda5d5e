"""Compressed inputs and outputs: gzip and zstd, known by their magic bytes whatever the file's name.

An input is read through a decompressor (offsets are those of the decompressed
text); its output is compressed the same way, reproducibly (no timestamp or
name in a gzip header), so a rerun writes the same bytes.
"""
from __future__ import annotations

import gzip
import io
import zlib
from typing import BinaryIO

GZIP, ZSTD = "gzip", "zstd"
_MAGIC = {b"\x1f\x8b": GZIP, b"\x28\xb5\x2f\xfd": ZSTD}
CHUNK = 1 << 20
GZIP_LEVEL, ZSTD_LEVEL = 6, 3       # the gzip and zstd command lines' defaults


def compression_of(path) -> str | None:
    with open(path, "rb") as handle:
        head = handle.read(4)
    return _MAGIC.get(head[:2]) or _MAGIC.get(head)


# what reading a damaged or cut-short compressed file raises (the zstd reader below raises these too)
READ_ERRORS = (EOFError, OSError, zlib.error)


def open_input(path, compression: str | None = None) -> BinaryIO:
    """The file's bytes, decompressed when it is compressed (found from the file unless given)."""
    compression = compression or compression_of(path)
    if compression == GZIP:
        return gzip.open(path, "rb")
    if compression == ZSTD:
        return io.BufferedReader(_ZstdReader(path), CHUNK)
    return open(path, "rb")


class _ZstdReader(io.RawIOBase):
    """A .zst file's text, frame after frame. One that ends inside a frame (cut short) raises EOFError, as
    gzip does: zstandard's own stream reader just stops there."""

    def __init__(self, path):
        import zstandard  # only for .zst files
        self._zstd, self._file = zstandard, open(path, "rb")
        self._frame, self._in_frame, self._unused, self._pending = None, False, b"", b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = self._unused or self._file.read(CHUNK)
            self._unused = b""
            if not chunk:
                if self._in_frame:
                    raise EOFError("the zstd file ends inside a frame: it was cut short")
                return 0
            self._frame = self._frame or self._zstd.ZstdDecompressor().decompressobj()
            try:
                self._pending = self._frame.decompress(chunk)
            except self._zstd.ZstdError as error:
                raise OSError(f"damaged zstd data: {error}") from None
            self._in_frame = not self._frame.eof
            if self._frame.eof:
                self._unused, self._frame = self._frame.unused_data, None
        size = min(len(buffer), len(self._pending))
        buffer[:size], self._pending = self._pending[:size], self._pending[size:]
        return size

    def close(self) -> None:
        self._file.close()
        super().close()


def skip_to(handle: BinaryIO, offset: int) -> None:
    """Move a fresh handle to `offset`; a decompressor that cannot seek reads up to it."""
    if handle.seekable():
        handle.seek(offset)
        return
    left = offset
    while left > 0 and (chunk := handle.read(min(CHUNK, left))):
        left -= len(chunk)


def compressing(handle: BinaryIO, compression: str | None):
    """A writer into `handle` that compresses (closing it ends the stream, not the handle), or the handle."""
    if compression == GZIP:
        return gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0, compresslevel=GZIP_LEVEL)
    if compression == ZSTD:
        import zstandard
        return zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(handle, closefd=False)
    return None
