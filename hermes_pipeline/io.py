"""Streaming JSONL in, atomic JSONL out.

Records are read one line at a time (memory grows with the largest record,
not the file) and parsed with orjson, falling back to the standard library
for what real logs contain and orjson refuses (NaN, lone surrogates). Lines
that can't be parsed become `Rejected` items naming file and line; the caller
quarantines them and goes on.
"""
from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import orjson

BOM = b"\xef\xbb\xbf"
READ_CHUNK = 1 << 20


@dataclass
class Record:
    path: str
    line_no: int
    value: Any
    raw_size: int
    repairs: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line_no}"


@dataclass
class Rejected:
    path: str
    line_no: int
    reason: str
    raw: bytes = b""

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line_no}"


def _skip_rest_of_line(handle, tail: bytes) -> None:
    while tail and not tail.endswith(b"\n"):
        tail = handle.readline(READ_CHUNK)


def iter_raw_lines(path: str, max_record_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) for each line; bytes is None when the line is too long."""
    with open(path, "rb") as handle:
        line_no = 0
        while True:
            line = handle.readline(max_record_bytes + 1)
            if not line:
                return
            line_no += 1
            if len(line) > max_record_bytes and not line.endswith(b"\n"):
                _skip_rest_of_line(handle, line)
                yield line_no, None
                continue
            yield line_no, line


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return False


def parse_line(path: str, line_no: int, raw: bytes) -> Record | Rejected | None:
    """Parse one JSONL line; None for a blank line."""
    repairs = []
    data = raw
    if line_no == 1 and data.startswith(BOM):
        data = data[len(BOM):]
        repairs.append("removed UTF-8 byte order mark")
    stripped = data.strip()
    if not stripped:
        return None
    if stripped[:1] == b"#" or stripped[:2] == b"//":
        return Rejected(path, line_no, "comment line, not a JSON record", raw)
    try:
        return Record(path, line_no, orjson.loads(stripped), len(raw), repairs)
    except orjson.JSONDecodeError as orjson_error:
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError as error:
            return Rejected(path, line_no, f"invalid UTF-8 at byte {error.start}", raw)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            return Rejected(path, line_no, f"malformed JSON: {error.msg} at column {error.colno}", raw)
        note = "NaN/Infinity" if _has_nan(value) else "lone surrogate escape or other orjson-rejected input"
        repairs.append(f"parsed with the standard json module ({note}; orjson: {orjson_error})")
        return Record(path, line_no, value, len(raw), repairs)


def read_records(path: str, max_record_bytes: int) -> Iterator[Record | Rejected]:
    for line_no, raw in iter_raw_lines(path, max_record_bytes):
        if raw is None:
            yield Rejected(path, line_no, f"record larger than input.max_record_bytes ({max_record_bytes} bytes)")
            continue
        item = parse_line(path, line_no, raw)
        if item is not None:
            yield item


def dumps(value: Any) -> bytes:
    """One JSON line. orjson when it can represent the value exactly, else stdlib."""
    if not _has_nan(value):
        try:
            return orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            pass  # lone surrogates: stdlib keeps them as \\udXXX escapes
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class AtomicJsonlWriter:
    """Writes to a hidden temporary file and renames it into place on commit."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.temp = path.with_name(f".{path.name}.part")
        self.handle = open(self.temp, "wb")
        self.bytes_written = 0

    def write(self, value: Any) -> None:
        line = dumps(value) + b"\n"
        self.handle.write(line)
        self.bytes_written += len(line)

    def commit(self) -> None:
        self.handle.close()
        os.replace(self.temp, self.path)

    def abort(self) -> None:
        self.handle.close()
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

    def close(self) -> None:
        self.handle.close()


def raw_for_quarantine(raw: bytes) -> dict:
    """The raw record as text, plus base64 when it isn't valid UTF-8."""
    try:
        return {"raw": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw": raw.decode("utf-8", "backslashreplace"),
                "raw_base64": base64.b64encode(raw).decode("ascii")}
