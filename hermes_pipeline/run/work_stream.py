"""The run's one stream of work: every input file's records, in order, with markers between files.

One stream across all files keeps the runner's workers busy whatever the
files hold (a folder of one-conversation logs included). Each file is read,
its format detected and its records keyed for the incremental state here, as
the runner pulls; the executor gets the same items back in the same order and
records them. Markers (FileStart, FileEnd, FileSkipped) need no engine, so the
runner passes them through in place. In a one-conversation-per-line file, the
lines after those read to detect the format go out unparsed (Deferred): a
worker parses its own, and a line an incremental run finds done is never parsed.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Iterator

from hermes_pipeline.formats import CONVERSATION, TranscriptFormat, detect_format_in, get_format
from hermes_pipeline.formats.hermes_store import STORE, HermesStoreFormat, is_store
from hermes_pipeline.formats.hermes_store.layout import store_layout
from hermes_pipeline.inputs.contents import BINARY, DOCUMENT, Contents, read_input, sniff
from hermes_pipeline.inputs.find import InputFile
from hermes_pipeline.inputs.json_array import DocumentLayout
from hermes_pipeline.inputs.jsonl import READ_CHUNK, Record, Rejected, Unparsed, parsed, reject
from hermes_pipeline.run.fault_injection import fault_point
from hermes_pipeline.run.incremental import Item, reusable
from hermes_pipeline.run.output_tree import CountingSink, FileSink, OutputTree
from hermes_pipeline.run.run_folder import run_log
from hermes_pipeline.run.store_sink import IN_PLACE, StoreSink
from hermes_pipeline.transcript import Conversation

DETECT_WINDOW = 50          # records read ahead to find one that shows the format ...
DETECT_BYTES = 1 << 20      # ... or fewer, once this much input is held: memory follows a conversation, not a file;
                            # with workers, the lines read here are parsed by this process, the rest by them
UNKNOWN = "unknown transcript format (no record matched any known format)"


@dataclass
class FileWork:
    """One input file on its way: what the executor needs to record its items."""
    input_file: InputFile
    rel: str
    stat: os.stat_result
    sink: FileSink | None = None
    fmt: TranscriptFormat | None = None
    layout: str = CONVERSATION
    out_fmt: TranscriptFormat | None = None
    out_layout: str = CONVERSATION
    keys: deque = field(default_factory=deque)   # state keys of the items, in the order they come back
    items: int = 0
    retry_later: bool = False      # a conversation to try again next run: the file is never skipped whole
    cut_short: bool = False        # a stop came before its last record
    unchanged_items: int | None = None   # found as last written: nothing read
    statuses: Counter = field(default_factory=Counter)   # what became of its records, for the run log


@dataclass(frozen=True)
class FileStart:
    work: FileWork


@dataclass(frozen=True)
class FileEnd:
    work: FileWork


@dataclass(frozen=True)
class FileSkipped:
    work: FileWork


@dataclass(frozen=True)
class Deferred:
    """A one-conversation line of a file whose format is known, parsed where it is compacted: with
    worker processes or Dask, the reading process only reads and hashes lines."""
    line: Unparsed
    format_name: str
    layout: str

    @property
    def digest(self) -> str:
        return self.line.digest

    def read(self) -> Conversation | Rejected:
        """What the format reads from this line: its conversation, or why it can't be one."""
        record = self.line.parse()
        return next(iter(get_format(self.format_name).read([record], self.line.path, self.layout)))


@dataclass(frozen=True)
class Reused:
    """A conversation the output tree already holds, as it would be written again."""
    found: Item


def file_digest(path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def output_format(fmt: TranscriptFormat, layout: str, wanted: str) -> tuple[TranscriptFormat, str]:
    if wanted not in ("same", fmt.name):
        return get_format(wanted), CONVERSATION
    if fmt.write_as and not fmt.native:   # read-only logs are written in another format, one per line
        return get_format(fmt.write_as), CONVERSATION
    return fmt, layout


class WorkStream:
    def __init__(self, inputs: list[InputFile], tree: OutputTree, options, stop: threading.Event, progress):
        self.inputs, self.tree, self.state = inputs, tree, tree.state
        self.options, self.stop, self.progress = options, stop, progress
        self.open: list[FileWork] = []     # started here, not yet finished by the executor

    def __iter__(self) -> Iterator:
        for input_file in self.inputs:
            if self.stop.is_set():
                return
            fault_point("file")
            work = FileWork(input_file, input_file.relative.as_posix(), input_file.path.stat())
            if self.state is not None:
                work.unchanged_items = self.state.file_unchanged(work.rel, work.stat,
                                                                 self.tree.path_for(input_file.relative))
                if work.unchanged_items is not None:    # size, mtime, config and output as last written
                    self.progress.advance(work.stat.st_size)
                    yield FileSkipped(work)
                    continue
            store = is_store(input_file.path)
            contents, document, refused = None, None, None
            writes_store = store and self.options.output_format in ("same", HermesStoreFormat.name) \
                and not self.tree.dry
            if store:
                refused = self._store_refused(input_file.path, writes_store,
                                              writes_store and self.options.native.store == IN_PLACE)
            if refused:   # set aside whole: nothing is read from it or written for it
                work.sink = CountingSink()
            elif writes_store:
                work.sink = StoreSink(input_file.path, self.tree.path_for(input_file.relative),
                                      self.options.native.store == IN_PLACE, keep_partial=not self.tree.persistent)
            elif store:   # a store's sessions converted (or a dry run): one conversation per line, in a .jsonl
                work.sink = self.tree.sink(input_file.relative.with_suffix(".jsonl"))
            else:
                contents = sniff(input_file.path)
                document = DocumentLayout() if contents.kind == DOCUMENT else None   # filled in as it is read
                work.sink = self.tree.sink(input_file.relative, contents.compression, document)
            self.open.append(work)
            yield from self._store(work, refused) if store else self._file(work, contents, document)

    @staticmethod
    def _store_refused(path, writes: bool, in_place: bool) -> str | None:
        """Why a Hermes store is not read (or, written, not compacted), looked at just before; a store of a
        version this release was not tested with, but of the tables and columns it knows, is said in the log."""
        layout = store_layout(path)
        refused = layout.refusal(path, in_place, writes)
        if refused is None and writes and layout.untested(path):
            run_log.warning("%s", layout.untested(path))
        return refused

    def _store(self, work: FileWork, refused: str | None) -> Iterator:
        """The sessions of a Hermes store, one conversation each (not read line by line); or, refused, one
        rejection naming the file and why."""
        work.fmt, work.layout = get_format(HermesStoreFormat.name), STORE
        work.out_fmt, work.out_layout = output_format(work.fmt, work.layout, self.options.output_format)
        self.progress.advance(work.stat.st_size)
        yield FileStart(work)
        path = work.input_file.path
        yield from self._keyed(work, [Rejected(str(path), 0, refused)] if refused else work.fmt.read_store(path))
        yield FileEnd(work)

    def _file(self, work: FileWork, contents: Contents, document: DocumentLayout | None) -> Iterator:
        path = str(work.input_file.path)
        items = read_input(path, contents, self.options.max_record_bytes, document)
        # the progress bar counts input bytes: a compressed file's (or a binary one's) once it is read
        lines = self._counted(items) if contents.kind != BINARY and contents.kind != DOCUMENT \
            and not contents.compression else items
        work.fmt, work.layout, head, rest = self._detect(lines)
        yield FileStart(work)
        if work.fmt is None:
            records = itertools.chain(head, parsed(rest))
            yield from self._keyed(work, (i if isinstance(i, Rejected) else reject(i, UNKNOWN) for i in records))
            if work.items == 0:
                work.keys.append("empty")
                work.items = 1
                yield Rejected(path, 0, "empty file: no records")
        else:
            work.out_fmt, work.out_layout = output_format(work.fmt, work.layout, self.options.output_format)
            yield from self._read(work, path, head, rest)
        if lines is items:
            self.progress.advance(work.stat.st_size)
        yield FileEnd(work)

    def _read(self, work: FileWork, path: str, head: Iterator, rest: Iterator) -> Iterator:
        """The keyed items of a file whose format is known."""
        if work.layout == CONVERSATION:
            # the lines read to detect the format are parsed already; the others are parsed where compacted
            later = (Deferred(line, work.fmt.name, work.layout) if isinstance(line, Unparsed) else line
                     for line in rest if not (isinstance(line, Unparsed) and line.blank))
            return self._keyed(work, itertools.chain(work.fmt.read(head, path, work.layout), later))
        # a conversation of many lines: assembled here
        whole_file = "file:" + file_digest(work.input_file.path) if self.state is not None else None
        return self._keyed(work, work.fmt.read(itertools.chain(head, parsed(rest)), path, work.layout), whole_file)

    def _keyed(self, work: FileWork, items: Iterator, whole_file: str | None = None) -> Iterator:
        """Items with their state keys queued; reused ones replaced; no new item once a stop is asked."""
        occurrences: Counter = Counter()
        for item in items:
            if self.stop.is_set():
                work.cut_short = True
                return
            key = whole_file if isinstance(item, Conversation) and whole_file else None
            if key is None:
                key = f"{item.digest}:{occurrences[item.digest]}"
                occurrences[item.digest] += 1
            work.keys.append(key)
            work.items += 1
            found = self.state.item(work.rel, key) if self.state is not None else None
            yield Reused(found) if found is not None and reusable(found) else item

    def _counted(self, items: Iterator[Unparsed | Rejected]) -> Iterator[Unparsed | Rejected]:
        for item in items:
            if isinstance(item, Unparsed):
                self.progress.advance(item.raw_size)
            yield item

    def _detect(self, lines):
        """The format and layout of a file, from its first records (one line may not tell):
        (format, layout, those records parsed, the lines after them)."""
        head: deque = deque()
        held = 0
        for record in parsed(lines):
            head.append(record)
            held += record.raw_size if isinstance(record, Record) else 0
            if len(head) >= DETECT_WINDOW or held >= DETECT_BYTES:
                break
        values = [i.value for i in head if isinstance(i, Record)]
        head_items = _drained(head)    # each record let go as soon as it is passed on
        if self.options.input_format != "auto":
            fmt = get_format(self.options.input_format)
            return fmt, next(filter(None, map(fmt.detect, values)), None) or CONVERSATION, head_items, lines
        found = detect_format_in(values)
        return (*found, head_items, lines) if found else (None, CONVERSATION, head_items, lines)


def _drained(queue: deque) -> Iterator:
    while queue:
        yield queue.popleft()
