"""Streaming JSONL in, atomic JSONL out.

Records are read one line at a time (memory grows with the largest record,
not the file) and parsed with orjson, falling back to the standard library
for what real logs contain and orjson refuses (NaN, lone surrogates). Lines
that can't be parsed become `Rejected` items naming file and line; the caller
quarantines them and goes on. Every item knows where its line is in the input
(`span`), so the quarantine gets the exact bytes, even of a line too large to
hold in memory (copied in chunks).
"""
from __future__ import annotations

import base64
import codecs
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from hermes_pipeline.inputs.compressed import READ_ERRORS, compressing, open_input, skip_to

BOM = b"\xef\xbb\xbf"
READ_CHUNK = 1 << 20


@dataclass
class Record:
    path: str
    line_no: int
    value: Any
    raw_size: int
    repairs: list[str] = field(default_factory=list)
    span: tuple[int, int] | None = None     # (byte offset, length) of the line in the input
    digest: str = ""                        # of the line's bytes: what an incremental run compares
    raw: bytes | None = None                # the line as read (an unchanged conversation, a native writer's copy)

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line_no}"

    @property
    def line(self) -> bytes:
        """The line's bytes without its newline; re-encoded when it was not read from a file."""
        if self.raw is None:
            return dumps(self.value)
        return self.raw[:-1] if self.raw.endswith(b"\n") else self.raw


class Verbatim(bytes):
    """An output line written exactly as these bytes: an input line kept as it was."""


@dataclass
class Rejected:
    path: str
    line_no: int
    reason: str
    raw: bytes = b""
    span: tuple[int, int] | None = None     # where the raw line is in the input, when known
    digest: str = ""

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line_no}"


@dataclass
class Unparsed:
    """A line read but not parsed yet: parsed where its conversation is compacted (a worker, for a
    runner that has them), or never (a line an incremental run finds done already)."""
    path: str
    line_no: int
    raw: bytes
    span: tuple[int, int]
    digest: str

    @property
    def raw_size(self) -> int:
        return len(self.raw)

    @property
    def blank(self) -> bool:
        """What parse_line skips: nothing but whitespace (and a byte order mark)."""
        return not _without_bom(self.raw).strip()

    def parse(self) -> Record | Rejected | None:
        item = parse_line(self.path, self.line_no, self.raw, self.span)
        if item is not None:
            item.digest = self.digest
        return item


def reject(record: Record, reason: str) -> Rejected:
    """A parsed record that a reader can't use; the quarantine gets its line as it was."""
    return Rejected(record.path, record.line_no, reason, record.line, record.span, record.digest)


def line_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _skip_rest_of_line(handle, tail: bytes) -> tuple[int, int, str]:
    """Read past the end of an over-long line: the bytes it took, its length (newline excluded), its digest."""
    size, digest = len(tail), hashlib.blake2b(tail, digest_size=16)
    while tail and not tail.endswith(b"\n"):
        tail = handle.readline(READ_CHUNK)
        size += len(tail)
        digest.update(tail)
    return size, size - (1 if tail.endswith(b"\n") else 0), digest.hexdigest()


def iter_raw_lines(path: str, max_record_bytes: int) -> Iterator[tuple[int, int, bytes | None, int, str]]:
    """(line number, byte offset, bytes, length, digest) per line; bytes is None when the line is too long.

    Memory stays within max_record_bytes (+ one read chunk) whatever the line lengths. A compressed file
    is read decompressed: offsets are in its text.
    """
    with open_input(path) as handle:
        line_no, offset = 0, 0
        while True:
            line = handle.readline(max_record_bytes + 1)
            if not line:
                return
            line_no += 1
            if len(line) > max_record_bytes and not line.endswith(b"\n"):
                taken, size, digest = _skip_rest_of_line(handle, line)
                yield line_no, offset, None, size, digest
                offset += taken
                continue
            yield line_no, offset, line, len(line.rstrip(b"\n")), line_digest(line)
            offset += len(line)


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return False


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _stdlib_note(value: Any) -> str:
    found = [name for name, present in (("NaN/Infinity", _has_nan(value)),
                                        ("lone surrogate escapes", _has_surrogate(value))) if present]
    return " and ".join(found) or "input orjson refuses"


def _without_bom(raw: bytes) -> bytes:
    return raw[len(BOM):] if raw.startswith(BOM) else raw


def _at_column(error: json.JSONDecodeError) -> str:
    """The stdlib's message and column, read as one sentence: some of its messages end in "at"
    ("Unterminated string starting at"), which must not become "at at column"."""
    where = "" if error.msg.endswith(" at") else " at"
    return f"{error.msg}{where} column {error.colno}"


def parse_line(path: str, line_no: int, raw: bytes, span: tuple[int, int] | None = None) -> Record | Rejected | None:
    """Parse one JSONL line; None for a blank line."""
    data = _without_bom(raw)      # line 1 usually; any line of files joined with cat
    repairs = ["removed UTF-8 byte order mark"] if len(data) < len(raw) else []
    stripped = data.strip()
    if not stripped:
        return None
    if stripped[:1] == b"#" or stripped[:2] == b"//":
        return Rejected(path, line_no, "comment line, not a JSON record", raw, span)
    try:
        return Record(path, line_no, orjson.loads(stripped), len(raw), repairs, span, raw=raw)
    except orjson.JSONDecodeError as orjson_error:
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError as error:
            return Rejected(path, line_no, f"invalid UTF-8 at byte {error.start}", raw, span)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            return Rejected(path, line_no, f"malformed JSON: {_at_column(error)}", raw, span)
        except RecursionError:
            return Rejected(path, line_no, "malformed JSON: nested too deeply", raw, span)
        repairs.append(f"parsed with the standard json module ({_stdlib_note(value)}; orjson: {orjson_error})")
        return Record(path, line_no, value, len(raw), repairs, span, raw=raw)


def read_lines(path: str, max_record_bytes: int) -> Iterator[Unparsed | Rejected]:
    """Each line as read; a line over the limit is rejected without being held; a compressed file that is
    cut short or damaged gives its lines up to there, then one rejection saying so."""
    line_no = 0
    try:
        for line_no, offset, raw, size, digest in iter_raw_lines(path, max_record_bytes):
            if raw is None:
                yield Rejected(path, line_no, f"record of {size} bytes is larger than input.max_record_bytes "
                                              f"({max_record_bytes} bytes)", span=(offset, size), digest=digest)
            else:
                yield Unparsed(path, line_no, raw, (offset, size), digest)
    except READ_ERRORS as error:
        yield Rejected(path, line_no + 1, f"the compressed file could not be read past line {line_no}: {error}")


def parsed(items: Iterable[Unparsed | Rejected]) -> Iterator[Record | Rejected]:
    """Lines parsed into records, blank ones left out."""
    for item in items:
        record = item.parse() if isinstance(item, Unparsed) else item
        if record is not None:
            yield record


def read_records(path: str, max_record_bytes: int) -> Iterator[Record | Rejected]:
    return parsed(read_lines(path, max_record_bytes))


def dumps(value: Any) -> bytes:
    """One JSON line. orjson when it can represent the value exactly, else stdlib."""
    try:
        data = orjson.dumps(value)
        # orjson writes NaN and Infinity as null: only a line with a null can hide one
        if b"null" not in data or not _has_nan(value):
            return data
    except (TypeError, orjson.JSONEncodeError):
        pass  # lone surrogates: stdlib keeps them as \\udXXX escapes
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def encode_lines(values: Iterable[Any]) -> bytes:
    """JSONL bytes of a writer's output: JSON values encoded, Verbatim lines as they are."""
    return b"".join((v if isinstance(v, Verbatim) else dumps(v)) + b"\n" for v in values)


class AtomicJsonlWriter:
    """Writes to a hidden temporary file and renames it into place on commit; compressed like its input
    when asked (compressed.py). `size` is the file's size on disk once committed."""

    def __init__(self, path: Path, compression: str | None = None):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.temp = path.with_name(f".{path.name}.part")
        self.handle = open(self.temp, "wb")
        self.stream = compressing(self.handle, compression) or self.handle
        self.bytes_written = 0
        self.size = 0

    def write(self, value: Any) -> None:
        self.write_bytes(dumps(value) + b"\n")

    def write_bytes(self, data: bytes) -> None:
        """Lines already serialized (each ending with a newline)."""
        self.stream.write(data)
        self.bytes_written += len(data)

    def _close(self) -> None:
        if self.stream is not self.handle:
            self.stream.close()       # the end of the compressed stream; the file stays open
        self.handle.close()

    def commit(self) -> None:
        self._close()
        self.size = os.path.getsize(self.temp)
        os.replace(self.temp, self.path)

    def abort(self) -> None:
        self._close()
        if self.temp.exists():
            self.temp.unlink()


class JsonlLog:
    """An append-only JSONL file (manifest, quarantine), flushed per row."""

    def __init__(self, path: Path):
        self.handle = open(path, "ab")
        self.rows = 0

    def write(self, value: Any) -> None:
        self.handle.write(dumps(value) + b"\n")
        self.handle.flush()
        self.rows += 1

    def write_rejected(self, fields: dict, item: Rejected) -> None:
        """A quarantine row: `fields` plus the rejected line exactly as it is in the input.

        Lines up to a few MiB are read back whole; longer ones are copied in
        chunks, so a record too large to parse costs no more memory than a chunk.
        """
        raw = _read_span(item.path, item.span) if item.span and item.span[1] <= COPY_WHOLE else None
        if raw is not None or not item.span:
            self.write({**fields, **raw_for_quarantine(item.raw if raw is None else raw)})
            return
        head = dumps({**fields, "raw_bytes": item.span[1]})
        self.handle.write(head[:-1] + b',"raw":"')
        invalid = _copy_escaped(item.path, item.span, self.handle)
        self.handle.write(b'"' + (b',"raw_invalid_utf8":true' if invalid else b"") + b"}\n")
        self.handle.flush()
        self.rows += 1

    def close(self) -> None:
        self.handle.close()


COPY_WHOLE = 4 * READ_CHUNK


def _read_span(path: str, span: tuple[int, int]) -> bytes | None:
    """The bytes of a line of the input, or None if the file no longer has them."""
    try:
        with open_input(path) as handle:
            skip_to(handle, span[0])
            raw = handle.read(span[1])
    except READ_ERRORS:
        return None
    return raw if len(raw) == span[1] else None


def _copy_escaped(path: str, span: tuple[int, int], out) -> bool:
    """Copy a line into an open JSON string, chunk by chunk; True if it had invalid UTF-8
    (written as backslash escapes from there on)."""
    decoder, invalid, left = codecs.getincrementaldecoder("utf-8")(), False, span[1]
    with open_input(path) as handle:
        skip_to(handle, span[0])
        while left > 0:
            chunk = handle.read(min(READ_CHUNK, left))
            left = left - len(chunk) if chunk else 0
            pending = decoder.getstate()[0]
            try:
                text = decoder.decode(chunk, final=left == 0)
            except UnicodeDecodeError:
                invalid = True
                decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")
                text = decoder.decode(pending + chunk, final=left == 0)
            out.write(json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"))
    return invalid


def quarantine_row(fields: dict, item: Rejected) -> dict | None:
    """The whole quarantine row of a rejected line, or None when the line is too long to hold
    (then JsonlLog.write_rejected copies it in chunks)."""
    if item.span and item.span[1] > COPY_WHOLE:
        return None
    raw = _read_span(item.path, item.span) if item.span else None
    return {**fields, **raw_for_quarantine(item.raw if raw is None else raw)}


def raw_for_quarantine(raw: bytes) -> dict:
    """The raw record as text, plus base64 when it isn't valid UTF-8."""
    try:
        return {"raw": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw": raw.decode("utf-8", "backslashreplace"),
                "raw_base64": base64.b64encode(raw).decode("ascii")}
