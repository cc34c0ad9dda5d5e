"""What an input file holds, found from its first bytes: how it is compressed, and JSON Lines, one JSON
document, other text, or not text at all.

Compressed files are read through a decompressor (compressed.py): line
numbers and byte spans are those of the decompressed text. A JSON document
(`[...]`, or an object spread over lines, in a file not named .jsonl or
.ndjson) is read element by element (json_array.py). A file that is not text (an image, an archive we do not read)
is one rejected record naming what it looks like, never one per newline-split
chunk.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from hermes_pipeline.inputs.compressed import READ_ERRORS, compression_of, open_input
from hermes_pipeline.inputs.json_array import DocumentLayout, read_elements
from hermes_pipeline.inputs.jsonl import BOM, COPY_WHOLE, READ_CHUNK, Rejected, Unparsed, read_lines

SNIFF_BYTES = 8192
# what a binary file is, by its first bytes
_BINARY = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
           (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a ZIP archive"), (b"\xfd7zXZ", "an xz archive"),
           (b"SQLite format 3\x00", "an SQLite database"), (b"\x7fELF", "an executable"))
_TEXT_CONTROLS = set(b"\t\n\r\f\b\x1b")

JSONL, DOCUMENT, TEXT, BINARY, EMPTY = "jsonl", "json-document", "text", "binary", "empty"


@dataclass(frozen=True)
class Contents:
    kind: str                    # JSONL, DOCUMENT, TEXT, BINARY or EMPTY
    compression: str | None      # compressed.GZIP, compressed.ZSTD or None
    what: str = ""               # BINARY: what it looks like; TEXT: how it starts; DOCUMENT: "array" or "object"


def _binary(head: bytes) -> str | None:
    """What a file that is not text looks like, or None for text (a stray NUL or bad byte in a line of
    JSON is that line's problem, not the file's: only mostly-control bytes or a known signature count)."""
    for magic, what in _BINARY:
        if head.startswith(magic):
            return what
    controls = sum(byte < 0x20 and byte not in _TEXT_CONTROLS for byte in head)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and controls > len(head) // 4:    # NUL every other byte
        return "UTF-16 text (convert it to UTF-8)"
    return "binary data" if controls > len(head) // 20 else None     # random bytes: about 10%


def sniff(path) -> Contents:
    compression = compression_of(path)
    try:
        with open_input(path, compression) as handle:
            head = handle.read(SNIFF_BYTES)
    except READ_ERRORS as error:       # a broken archive: said as what it is
        return Contents(BINARY, None, f"a damaged {compression} file ({error})")
    text = head[len(BOM):] if head.startswith(BOM) else head
    if not text.strip():
        return Contents(EMPTY, compression)
    what = _binary(text)
    if what:
        return Contents(BINARY, compression, what)
    start = text.lstrip()
    first_line = start.split(b"\n", 1)[0].strip()
    if _named_as_lines(path):
        return Contents(JSONL, compression)        # JSON Lines by name: each line a record, whatever it holds
    if start[:1] == b"[" and not _a_line_of_many(start):
        return Contents(DOCUMENT, compression, "array")
    if first_line == b"{":
        return Contents(DOCUMENT, compression, "object")
    if start[:1] in (b"{", b"["):
        return Contents(JSONL, compression)
    return Contents(TEXT, compression, first_line[:60].decode("utf-8", "replace"))


def plain_name(path) -> str:
    """The file's name in lower case, without a .gz or .zst suffix."""
    name = Path(path).name.lower()
    for suffix in (".gz", ".zst"):
        name = name.removesuffix(suffix)
    return name


def _named_as_lines(path) -> bool:
    return plain_name(path).endswith((".jsonl", ".ndjson"))


def _a_line_of_many(text: bytes) -> bool:
    """JSON Lines whose first value is an array: a first line that is a whole value, and more lines after it."""
    first, _, rest = text.partition(b"\n")
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return bool(rest.strip())


def read_input(path: str, contents: Contents, max_record_bytes: int,
               layout: DocumentLayout | None = None) -> Iterator[Unparsed | Rejected]:
    """The file's records as read: its lines, its JSON document's elements (what lies around them into
    `layout`), or one rejection for a binary file."""
    if contents.kind == BINARY:
        yield _whole_file(path, contents)
    elif contents.kind == DOCUMENT:
        with open_input(path, contents.compression) as handle:
            yield from read_elements(handle, path, max_record_bytes, layout)
    else:
        yield from read_lines(path, max_record_bytes)


def _whole_file(path: str, contents: Contents) -> Rejected:
    """A file that is not text, as one quarantine entry: its bytes (decompressed, if it decompresses)."""
    damaged = contents.compression is None and compression_of(path) is not None
    size = os.path.getsize(path) if damaged else _size(path, contents.compression)
    why = f"not text: {contents.what} ({size:,} bytes), not a transcript; set aside whole"
    if not damaged:
        return Rejected(path, 0, why, span=(0, size))
    with open(path, "rb") as handle:      # it does not decompress: its bytes as they are on disk
        raw = handle.read(COPY_WHOLE + 1)
    return Rejected(path, 0, why if len(raw) <= COPY_WHOLE else why + " (too large to copy)",
                    raw=raw if len(raw) <= COPY_WHOLE else b"")


def _size(path, compression: str | None) -> int:
    """Bytes of the decompressed content."""
    total = 0
    with open_input(path, compression) as handle:
        while chunk := handle.read(READ_CHUNK):
            total += len(chunk)
    return total
