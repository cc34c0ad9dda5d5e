"""The elements of a JSON array file, one record each, read in chunks.

A JSON document (`[{...}, {...}]`, often pretty-printed over many lines) is not
JSON Lines: each element of its top-level array is one record, with its line
number and byte span in the document like a JSONL line, so everything after
reading (detection, the quarantine's exact bytes, incremental keys) works the
same. A top-level object is one record. Memory follows the largest element: a
tokenizer walks the text in chunks and keeps only the element being read; one
longer than input.max_record_bytes is skipped (hashed, not held) and rejected.
"""
from __future__ import annotations

import hashlib
import re
from typing import BinaryIO, Iterator

from hermes_pipeline.compressed import READ_ERRORS
from hermes_pipeline.jsonl import BOM, READ_CHUNK, Rejected, Unparsed, line_digest

# one token after optional whitespace: a whole string, a structural character, or a bare value
_TOKEN = re.compile(rb'[ \t\r\n]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([\[\]{},:])|([^"\[\]{},:\s]+))', re.S)
# inside an element only brackets matter: the next one, past whole strings
# (unrolled: each byte can be matched one way only, so a failed match never backtracks far)
_BRACKET = re.compile(rb'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*([\[\]{}])', re.S)


_CLOSER = {b"[": b"]", b"{": b"}"}


class _Tokens:
    """Tokens of a JSON text read in chunks, with absolute byte offsets. Bytes before `keep` may be let go:
    they are, when the next chunk is read (trimming at every element would copy the buffer each time)."""

    def __init__(self, handle: BinaryIO):
        self.handle, self.buffer, self.base, self.pos, self.eof = handle, b"", 0, 0, False
        self.keep = 0
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
            chunk = chunk[len(BOM):]
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


def read_elements(handle: BinaryIO, path: str, max_record_bytes: int) -> Iterator[Unparsed | Rejected]:
    """Each element of the top-level array (or the top-level object) as a record."""
    tokens = _Tokens(handle)
    try:
        first = tokens.next()
        if first is None:
            return
        if first[0] == b"{":
            yield from _element(tokens, first, path, max_record_bytes, top_level=True)
            return
        if first[0] != b"[":
            raise ValueError(f"a JSON document that is not an array or an object starts with {first[0][:20]!r}")
        tokens.let_go(first[2])
        while True:
            token = tokens.next()
            if token is None:
                raise ValueError("the array is not closed")
            if token[0] == b"]":
                break
            if token[0] == b",":
                tokens.let_go(token[2])
                continue
            yield from _element(tokens, token, path, max_record_bytes)
        if tokens.next() is not None:
            raise ValueError("more text after the array")
    except ValueError as error:
        offset = tokens.base + tokens.pos
        yield Rejected(path, tokens.line_of(offset), f"malformed JSON document: {error} (byte {offset})")
    except READ_ERRORS as error:
        offset = tokens.base + len(tokens.buffer)
        yield Rejected(path, tokens.line_of(offset), f"the compressed file could not be read past byte {offset} "
                                                     f"of its text: {error}")


def _element(tokens: _Tokens, first: tuple[bytes, int, int], path: str, max_record_bytes: int,
             top_level: bool = False) -> Iterator[Unparsed | Rejected]:
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
        yield Rejected(path, line_no, f"record of {end - start} bytes is larger than input.max_record_bytes "
                                      f"({max_record_bytes} bytes)", span=(start, end - start),
                       digest=skipped.hexdigest())
        return
    raw = tokens.bytes(start, end)
    tokens.let_go(end)
    yield Unparsed(path, line_no, raw, (start, len(raw)), line_digest(raw))
    if top_level and tokens.next() is not None:
        raise ValueError("more text after the object")
