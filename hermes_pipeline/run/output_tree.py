"""Where compacted transcripts go: the run folder's transcripts/, or a persistent `output.dir`.

A persistent tree mirrors the input layout, is written by one run at a time
(a lock), and with `incremental=true` remembers what it holds (incremental.py), so a
rerun only does what changed and a killed run loses nothing it finished.
Files are written under a hidden `.name.part` and renamed into place when
their input file is done; leftovers of a killed run are removed on the next.
"""
from __future__ import annotations

from pathlib import Path

from hermes_pipeline.config import ConfigError
from hermes_pipeline.inputs.json_array import ARRAY, DocumentLayout, values_in
from hermes_pipeline.inputs.jsonl import AtomicJsonlWriter
from hermes_pipeline.run.incremental import STATE_DIR, STATE_FILE, IncrementalState, OutputLock
from hermes_pipeline.run.run_folder import recover_interrupted, run_log


class FileSink:
    """The output file of one input file, written as its conversations come: JSON Lines, compressed like
    the input."""

    def __init__(self, path: Path, keep_partial: bool, compression: str | None = None):
        self.writer = AtomicJsonlWriter(path, compression)
        self.keep_partial = keep_partial   # a run folder keeps what its manifest lists, even if stopped early
        self.written = 0

    def write(self, data: bytes) -> None:
        self.writer.write_bytes(data)
        self.written += 1

    def finish(self, complete: bool) -> int | None:
        """Rename into place (complete, or partial in a run folder) and return the size, or discard."""
        if self.written and (complete or self.keep_partial):
            self._end()
            self.writer.commit()
            return self.writer.size
        self.writer.abort()
        return None

    def _end(self) -> None:
        """What the file ends with after its last conversation."""


class DocumentSink(FileSink):
    """The output of a JSON document (an array of records, or one object): each value written goes where
    the input's element of the same place was, laid out with the bytes the input has around its elements
    (`layout`, filled in as the input is read, ahead of what is written here). A document whose elements
    all come back as read is the same bytes; past what the input had (more values, a document cut short),
    a plain layout."""

    def __init__(self, path: Path, keep_partial: bool, compression: str | None, layout: DocumentLayout):
        super().__init__(path, keep_partial, compression)
        self.layout = layout
        self.values = 0

    def write(self, data: bytes) -> None:
        for value in values_in(data):       # a value as read may span lines: not one per line
            self.writer.write_bytes(self._before(self.values) + value)
            self.values += 1
        self.written += 1

    def _before(self, index: int) -> bytes:
        array, layout = self.layout.kind == ARRAY, self.layout
        if index == 0:
            return layout.opening if layout.opening is not None else b"[\n" if array else b""
        if layout.separators:
            return layout.separators[min(index, len(layout.separators)) - 1]
        return b",\n" if array else b"\n"     # one object, written as more than one value: JSON Lines

    def _end(self) -> None:
        if self.layout.closing is not None:
            self.writer.write_bytes(self.layout.closing)
        else:
            self.writer.write_bytes(b"\n]\n" if self.layout.kind == ARRAY else b"\n")


class CountingSink:
    """A dry run's output file: its size is counted, nothing is written."""

    def __init__(self):
        self.writer = self          # FileSink's interface: the run loop may abort it
        self.written = self.size = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        self.written += 1

    def finish(self, complete: bool) -> int | None:
        return self.size if self.written else None

    def abort(self) -> None:
        self.size = 0


class OutputTree:
    def __init__(self, root: Path, persistent: bool, state: IncrementalState | None = None,
                 lock: OutputLock | None = None, moved_note: str | None = None, dry: bool = False):
        self.root, self.persistent, self.state, self.lock = root, persistent, state, lock
        self.dry = dry                    # a dry run: nothing written
        self.moved_note = moved_note      # the tree mirrored another input until this run

    @classmethod
    def in_run_folder(cls, run_dir: Path) -> "OutputTree":
        return cls(run_dir / "transcripts", persistent=False)

    @classmethod
    def nowhere(cls) -> "OutputTree":
        """dry_run=true: outputs are counted, not written."""
        return cls(Path("/dev/null"), persistent=False, dry=True)

    @classmethod
    def persistent_tree(cls, root: Path, run_dir: Path, incremental: bool, config_fp: str,
                        input_root: Path | str | None = None, input_moved: bool = False) -> "OutputTree":
        """Lock the tree, clean what a killed run left, and finish the records of runs that died.

        Raises OutputLocked when a live run holds the tree, and ConfigError for an input other than
        the one the tree mirrors (see _check_input_root) or a run without incremental into an incremental tree.
        """
        if not incremental and (root / STATE_DIR / STATE_FILE).exists():
            # its outputs would land among the tracked ones untracked: never reported gone, never pruned
            raise ConfigError(
                f"output.dir {root} holds the incremental state of earlier runs ({STATE_DIR}/{STATE_FILE}): a run "
                "without incremental=true would write into that tree outputs it does not track. Add "
                "incremental=true (with the input it mirrors), or give another output.dir")
        root.mkdir(parents=True, exist_ok=True)
        lock = OutputLock(root, run_dir)
        state, moved = None, None
        if incremental:
            state = IncrementalState(root, config_fp, run_id=str(run_dir.resolve()))
            try:
                moved = cls._check_input_root(state, root, input_root, input_moved)
            except ConfigError:
                state.close()
                lock.release()
                raise
        if lock.taken_over_from:
            run_log.warning("output.dir %s: its last holder (%s) died without releasing it; taken over",
                            root, lock.taken_over_from)
        for leftover in root.rglob(".*.part"):
            if STATE_DIR not in leftover.relative_to(root).parts:
                leftover.unlink()
                run_log.info("removed %s, left by a run that did not finish", leftover)
        if state is not None:
            for run_id, earlier in state.start_run(run_dir):
                rows = recover_interrupted(Path(earlier), state.rows_of_run(run_id), by=run_dir)
                if rows is not None:
                    run_log.warning("completed the records of %s, a run killed before it finished (%d row(s)); "
                                    "what it did not finish is done by this run", earlier, rows)
                state.finish_run("interrupted", run_id)
        return cls(root, persistent=True, state=state, lock=lock, moved_note=moved)

    @staticmethod
    def _check_input_root(state: IncrementalState, root: Path, input_root: Path | str | None,
                          moved: bool) -> str | None:
        """None, or what to say when the input moved; raises ConfigError for another input.

        The tree mirrors the input its first run read: its files' paths are relative to that folder.
        Another input (a subfolder, a typo) would write beside them and, with prune, see every other
        output as gone; so it is refused unless incremental.input_moved says the archive moved.
        """
        before = state.input_root()
        if input_root is None or before == str(input_root):
            return None
        if before is not None and not moved:
            raise ConfigError(
                f"output.dir {root} mirrors input {before}, and this run reads {input_root}: its outputs would "
                "land beside the others and, with incremental.prune=true, every output of the other files would "
                "be deleted as gone. Give the same input or another output.dir; if the archive moved there, "
                "add incremental.input_moved=true")
        state.set_input_root(str(input_root))
        if before is None:
            return None
        warning = f"output.dir {root} mirrored input {before}; it mirrors {input_root} from now on"
        run_log.warning("%s", warning)
        return warning

    def path_for(self, relative: Path) -> Path:
        return self.root / relative

    def sink(self, relative: Path, compression: str | None = None,
             document: DocumentLayout | None = None) -> FileSink | CountingSink:
        """Where one input file's output goes; `document`: the input is a JSON document laid out so."""
        if self.dry:
            return CountingSink()
        if document is not None:
            return DocumentSink(self.path_for(relative), not self.persistent, compression, document)
        return FileSink(self.path_for(relative), not self.persistent, compression)

    def removed_files(self, current: set[str], prune: bool) -> tuple[list[str], int]:
        """Files the tree has output for but the input no longer has (deleted with prune)."""
        if self.state is None:
            return [], 0
        gone = {rel: items for rel, items in self.state.known_files().items() if rel not in current}
        if prune:
            for rel in gone:
                self.path_for(Path(rel)).unlink(missing_ok=True)
                self.state.forget_file(rel)
        return sorted(gone), sum(gone.values())

    def close(self, status: str) -> None:
        if self.state is not None:
            self.state.finish_run(status)
            self.state.close()
        if self.lock is not None:
            self.lock.release()
