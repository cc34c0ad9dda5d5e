"""The elements of a JSON array file, one record each, read in chunks.

A JSON document (`[{...}, {...}]`, often pretty-printed over many lines) is not
JSON Lines: each element of its top-level array is one record, with its line
number and byte span in the document like a JSONL line, so everything after
reading (detection, the quarantine's exact bytes, incremental keys) works the
same. A top-level object is one record. Memory follows the largest element: a
tokenizer walks the text in chunks and keeps only the element being read; one
longer than input.max_record_bytes is skipped (hashed, not held) and rejected.

What lies around the elements (the `[` and its indentation, each separator, the
`]` and the final newline) is kept as read (DocumentLayout): the output is laid
out with it, so a document whose elements are all written back as read is the
same bytes.
"""
from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from hermes_pipeline.inputs.compressed import READ_ERRORS
from hermes_pipeline.inputs.jsonl import BOM, READ_CHUNK, Rejected, Unparsed, line_digest

# one token after optional whitespace: a whole string, a structural character, or a bare value
_TOKEN = re.compile(rb'[ \t\r\n]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([\[\]{},:])|([^"\[\]{},:\s]+))', re.S)
# inside an element only brackets matter: the next one, past whole strings
# (unrolled: each byte can be matched one way only, so a failed match never backtracks far)
_BRACKET = re.compile(rb'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*([\[\]{}])', re.S)


_CLOSER = {b"[": b"]", b"{": b"}"}
ARRAY, OBJECT = "array", "object"


@dataclass
class DocumentLayout:
    """The bytes of a JSON document around its elements, as read: before the first (with a byte order mark, if
    the file has one), between each two, after the last. Filled in as the document is read; what a document
    cut short never reached stays None (a writer then lays the rest out as a plain array)."""
    kind: str = ARRAY                       # ARRAY: a top-level array's elements; OBJECT: one top-level object
    opening: bytes | None = None
    separators: list[bytes] = field(default_factory=list)
    closing: bytes | None = None


class _Tokens:
    """Tokens of a JSON text read in chunks, with absolute byte offsets. Bytes before `keep` may be let go:
    they are, when the next chunk is read (trimming at every element would copy the buffer each time)."""

    def __init__(self, handle: BinaryIO):
        self.handle, self.buffer, self.base, self.pos, self.eof = handle, b"", 0, 0, False
        self.keep = 0
        self.bom = b""                       # the byte order mark the text starts with, left out of it
        self.counted, self.lines = 0, 0      # newlines before offset `counted`

    def next(self) -> tuple[bytes, int, int] | None:
        """(token, start, end) or None at the end of the text; raises ValueError on what is not JSON."""
        while True:
            match = _TOKEN.match(self.buffer, self.pos)
            if match and (match.end() < len(self.buffer) or self.eof):
                self.pos = match.end()
                start = match.start(match.lastindex)
                return match.group(match.lastindex), self.base + start, self.base + self.pos
            if self.eof:
                if self.buffer[self.pos:].strip():
                    raise ValueError(f"unexpected {self.buffer[self.pos:self.pos + 20]!r}")
                return None
            self._read()

    def bracket(self) -> tuple[bytes, int, int] | None:
        """The next bracket outside strings, or None at the end of the text."""
        while True:
            match = _BRACKET.match(self.buffer, self.pos)
            if match:
                self.pos = match.end()
                return match.group(1), self.base + match.start(1), self.base + self.pos
            if self.eof:
                return None
            self._read()

    def _read(self) -> None:
        self.line_of(self.keep)                 # count the lines of what goes
        cut = self.keep - self.base
        self.buffer, self.base, self.pos = self.buffer[cut:], self.keep, self.pos - cut
        chunk = self.handle.read(READ_CHUNK)
        if self.base == 0 and not self.buffer and chunk.startswith(BOM):
            chunk, self.bom = chunk[len(BOM):], BOM
            self.base = self.keep = self.counted = len(BOM)
        self.eof = not chunk
        self.buffer += chunk

    def let_go(self, keep: int) -> None:
        self.keep = keep

    def line_of(self, offset: int) -> int:
        """The line number of an offset at or after the last one asked about."""
        if offset > self.counted:
            self.lines += self.buffer.count(b"\n", self.counted - self.base, offset - self.base)
            self.counted = offset
        return self.lines + 1

    def bytes(self, start: int, end: int) -> bytes:
        return self.buffer[start - self.base:end - self.base]

    def rest(self, start: int) -> bytes:
        """The bytes from `start` to the end of what is read (at the end of the text: to its end)."""
        return self.buffer[start - self.base:]


def read_elements(handle: BinaryIO, path: str, max_record_bytes: int,
                  layout: DocumentLayout | None = None) -> Iterator[Unparsed | Rejected]:
    """Each element of the top-level array (or the top-level object) as a record; what lies around them
    goes into `layout`. The bytes since the last element are held until the next one starts: they are
    whitespace and a comma."""
    tokens = _Tokens(handle)
    layout = layout or DocumentLayout()
    try:
        first = tokens.next()
        if first is None:
            return
        if first[0] == b"{":
            layout.kind = OBJECT
            layout.opening = tokens.bom + tokens.bytes(tokens.keep, first[1])
            yield _element(tokens, first, path, max_record_bytes)
            gap_from = tokens.keep
            if tokens.next() is not None:
                raise ValueError("more text after the object")
            layout.closing = tokens.rest(gap_from)
            return
        if first[0] != b"[":
            raise ValueError(f"a JSON document that is not an array or an object starts with {first[0][:20]!r}")
        gap_from = tokens.keep      # where the bytes between the last element and the next begin
        while True:
            token = tokens.next()
            if token is None:
                raise ValueError("the array is not closed")
            if token[0] == b"]":
                break
            if token[0] == b",":
                continue
            gap = tokens.bytes(gap_from, token[1])
            if layout.opening is None:
                layout.opening = tokens.bom + gap
            else:
                layout.separators.append(gap)
            element = _element(tokens, token, path, max_record_bytes)
            gap_from = tokens.keep
            yield element
        if tokens.next() is not None:
            raise ValueError("more text after the array")
        layout.closing = tokens.rest(gap_from) if layout.opening is not None else None
    except ValueError as error:
        offset = tokens.base + tokens.pos
        yield Rejected(path, tokens.line_of(offset), f"malformed JSON document: {error} (byte {offset})")
    except READ_ERRORS as error:
        offset = tokens.base + len(tokens.buffer)
        yield Rejected(path, tokens.line_of(offset), f"the compressed file could not be read past byte {offset} "
                                                     f"of its text: {error}")


def _element(tokens: _Tokens, first: tuple[bytes, int, int], path: str, max_record_bytes: int) -> Unparsed | Rejected:
    """The element that starts with `first`, read to its end (the bytes after it are kept: tokens.keep)."""
    token, start, end = first
    line_no = tokens.line_of(start)
    tokens.let_go(start)
    closers = [_CLOSER[token]] if token in _CLOSER else []
    skipped, hashed = None, start     # a digest of what is let go, once the element is too long to hold
    while closers:
        found = tokens.bracket()
        if found is None:
            raise ValueError("an element is not closed")
        token, at, end = found
        if token in _CLOSER:
            closers.append(_CLOSER[token])
        else:
            expected = closers.pop()
            if token != expected:
                tokens.pos -= end - at      # the error is said where this token is
                raise ValueError(f"'{token.decode()}' where '{expected.decode()}' closes what is open")
        if end - start > max_record_bytes:
            skipped = skipped or hashlib.blake2b(digest_size=16)
            skipped.update(tokens.bytes(hashed, end))
            hashed = end
            tokens.let_go(end)
    if skipped is not None:
        skipped.update(tokens.bytes(hashed, end))
        tokens.let_go(end)
        return Rejected(path, line_no, f"record of {end - start} bytes is larger than input.max_record_bytes "
                                       f"({max_record_bytes} bytes)", span=(start, end - start),
                        digest=skipped.hexdigest())
    raw = tokens.bytes(start, end)
    tokens.let_go(end)
    return Unparsed(path, line_no, raw, (start, len(raw)), line_digest(raw))


def values_in(data: bytes) -> Iterator[bytes]:
    """The JSON values of a text that holds them one after another, each value's bytes as they are there
    (a writer's output: a line per value, or an element as read, over many lines)."""
    tokens = _Tokens(io.BytesIO(data))
    while (first := tokens.next()) is not None:
        token, start, end = first
        depth = 1 if token in _CLOSER else 0
        while depth:
            found = tokens.bracket()
            if found is None:
                raise ValueError(f"a value is not closed (byte {start} of the output)")
            depth += 1 if found[0] in _CLOSER else -1
            end = found[2]
        yield data[start:end]
