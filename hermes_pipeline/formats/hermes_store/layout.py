"""Which Hermes store layouts this release knows, and what it may do with a store of another.

hermes-agent records its store's schema in `schema_version` (22 for hermes-agent
0.19.0, the release the tests build their stores with and resume them in).
Another release may keep things elsewhere (newer ones keep the system prompts in
a table of their own), so a store is looked at before it is read:

- read (and compacted into a copy) only when the tables and columns the reader
  and the writer use are there; else it is set aside whole, naming what is missing;
- written in place only when, besides, its version is one whose layout this
  release knows: nothing is written into a store whose layout it does not know.

A store of another version with the same tables and columns is still compacted
into a copy, with a warning naming both versions: the copy is there to check.
"""
from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from hermes_pipeline.formats.hermes_store.store import ROW_FIELDS, connect

KNOWN_VERSIONS = {22: "hermes-agent 0.19.0"}      # schema_version -> the release whose stores the tests build
# the columns read (store.session_rows, row_message) and written (store.apply, compression_lock), by table
READ = {"sessions": ("id", "started_at", "system_prompt"),
        "messages": ("id", "session_id", "active", "role", "content", "tool_call_id", "tool_calls", "tool_name")}
WRITTEN = {"sessions": ("id", "message_count", "tool_call_count", "system_prompt"),
           "messages": ("session_id", "active", "compacted", *ROW_FIELDS),
           "compression_locks": ("session_id", "holder", "acquired_at", "expires_at")}


def known_versions() -> str:
    return ", ".join(f"schema_version {v} ({release})" for v, release in KNOWN_VERSIONS.items())


@dataclass(frozen=True)
class StoreLayout:
    version: int | str | None           # the store's schema_version, as recorded (None: it records none)
    unreadable: tuple[str, ...]         # "table.column"s the reader needs and the store lacks
    unwritable: tuple[str, ...]         # the same for the writer

    @property
    def described(self) -> str:
        return "no schema_version" if self.version is None else f"schema_version {self.version}"

    def refusal(self, path: Path, in_place: bool, writes: bool = True) -> str | None:
        """Why this store may not be read, or written (`writes`: its copy; `in_place`: itself), or None. (Not
        read or its copy not written: said of the store, for its quarantine entry, which names the file.)"""
        missing = self.unreadable + tuple(c for c in self.unwritable if c not in self.unreadable and writes)
        if in_place and (self.version not in KNOWN_VERSIONS or missing):
            layout = f", {', '.join(missing)} missing" if missing else ""
            # a copy is compacted when the tables and columns are those this release knows
            advice = "" if missing else "; compact a copy to check (output.native.store=copy, the default)"
            return (f"output.native.store=in_place: {path} is a Hermes store of {self.described}{layout}; this "
                    f"release knows {known_versions()} only, and writes nothing into a store whose layout it does "
                    f"not know{advice}")
        if missing:
            what = "read" if self.unreadable else "write a compaction into"
            return (f"a Hermes store of {self.described} that this release cannot {what} "
                    f"({', '.join(missing)} missing; it knows {known_versions()}); nothing read or written")
        return None

    def untested(self, path: Path) -> str | None:
        """What to say of a store compacted (into a copy) whose version this release was not tested with."""
        if self.version in KNOWN_VERSIONS:
            return None
        return (f"{path}: a Hermes store of {self.described}, which this release was not tested with (it knows "
                f"{known_versions()}): compacted into a copy, as its tables and columns are those it knows; "
                "check the copy before it replaces the store")


def store_layout(path: Path) -> StoreLayout:
    """The store's schema_version, and what the reader and the writer would not find in it."""
    with closing(connect(path, read_only=True)) as db:
        try:
            row = db.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
            version = row[0] if row is not None else None
        except sqlite3.OperationalError:     # no such table
            version = None
        columns = {table: {r["name"] for r in db.execute(f'PRAGMA table_info("{table}")')}
                   for table in {**READ, **WRITTEN}}
    lacking = lambda needed: tuple(f"{table}.{column}" for table, names in needed.items() for column in names
                                   if column not in columns[table])
    return StoreLayout(version, lacking(READ), lacking(WRITTEN))
