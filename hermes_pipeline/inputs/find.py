"""Which files a run reads, the name each one's output gets, and which files of an input folder it leaves alone.

An input is a file (read whatever it holds), a folder, or a glob (every file it
matches); `input.paths=[a,b]` gives several, each mirrored under its own name.
In a folder, files named as transcripts (`.jsonl`, `.json`, `.ndjson`, also
`.gz` / `.zst` compressed) are read; any other file is looked at: JSON or
compressed content is read whatever its name, a file that is not text is read
(it becomes one quarantine entry: nothing is silently skipped), and other
text (a README, a LICENSE) is not read, named in cli.log with why. Hidden files
and folders and the output of earlier runs are never read.
"""
from __future__ import annotations

import functools
import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from hermes_pipeline.config import ConfigError
from hermes_pipeline.inputs.contents import EMPTY, TEXT, plain_name, sniff

_WILDCARDS = set("*?[")
TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".ndjson")


@dataclass(frozen=True)
class InputFile:
    path: Path
    relative: Path      # mirrored under transcripts/


@dataclass
class Inputs:
    files: list[InputFile] = field(default_factory=list)
    not_read: list[tuple[str, str]] = field(default_factory=list)    # (file or folder, why it is not read)


def input_specs(cfg) -> list[str]:
    """`input.path` and `input.paths`, in that order."""
    specs = [str(cfg.input.path)] if cfg.input.get("path") else []
    return specs + [str(p) for p in cfg.input.get("paths") or ()]


def _static_prefix(pattern: str) -> Path:
    parts = []
    for part in Path(pattern).parts:
        if _WILDCARDS & set(part):
            break
        parts.append(part)
    return Path(*parts) if parts else Path(".")


@functools.lru_cache(maxsize=4096)
def _run_output(folder: Path) -> bool:
    return (folder / ".hydra").is_dir() or folder.name == ".hermes"


def _in_a_run_folder(found: "InputFile") -> bool:
    """Output of an earlier run (a folder holding `.hydra/`) or incremental state, found below the
    input's own folder: `input=.` where runs/ lives must not read runs/ back in (naming a run's
    transcripts as the input, to compact them again, is fine)."""
    path = found.path.absolute()
    below_root = path.parents[:max(len(found.relative.parts) - 1, 0)]
    return any(_run_output(parent) for parent in below_root)


def input_root(spec: str) -> Path:
    """The folder an input's relative paths start from: a file's folder, the folder, a glob's fixed part."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path.parent.resolve()
    if path.is_dir() or not _WILDCARDS & set(spec):
        return path.resolve()
    return _static_prefix(os.path.expanduser(spec)).resolve()


def input_roots(specs: list[str]) -> str:
    """What an output tree mirrors: the input's folder, or the folders of several inputs."""
    return "; ".join(str(input_root(spec)) for spec in specs)


def named_as_transcript(path: Path) -> bool:
    return plain_name(path).endswith(TRANSCRIPT_SUFFIXES)


def _folder(folder: Path, found: Inputs) -> list[InputFile]:
    files = []
    for top, folders, names in os.walk(folder):
        for name in sorted(folders):
            if name.startswith("."):        # named once, not each file in it
                found.not_read.append((str(Path(top, name)) + "/", "a hidden folder"))
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in names:
            path = Path(top, name)
            if name.startswith("."):
                found.not_read.append((str(path), "a hidden file"))
            elif path.is_file():
                why = None if named_as_transcript(path) else _not_a_transcript(path)
                if why:
                    found.not_read.append((str(path), why))
                else:
                    files.append(InputFile(path, path.relative_to(folder)))
    found.not_read.sort()
    return sorted(files, key=lambda f: f.relative)


def _not_a_transcript(path: Path) -> str | None:
    """Why a file not named as a transcript is left alone, or None when it is read after all (JSON, or not
    text: a binary file is set aside whole, in the quarantine, rather than silently skipped)."""
    contents = sniff(path)
    if contents.kind == TEXT:
        return f"text, not JSON (it starts {contents.what!r})"
    if contents.kind == EMPTY:
        return "empty"
    return None


def _one(spec: str, found: Inputs) -> list[InputFile]:
    path = Path(spec).expanduser()
    if path.is_file():
        return [InputFile(path, Path(path.name))]
    if path.is_dir():
        return _folder(path, found)
    if _WILDCARDS & set(spec):
        spec = os.path.expanduser(spec)
        root = _static_prefix(spec)
        return [InputFile(Path(p), Path(p).relative_to(root) if Path(p).is_relative_to(root) else Path(Path(p).name))
                for p in sorted(glob.glob(spec, recursive=True)) if Path(p).is_file()]
    raise ConfigError(f"input={spec!r}: no such file or directory")


def _labels(specs: list[str]) -> list[str]:
    """A folder name per folder or glob input, unique: several inputs are mirrored side by side under these;
    a file given by name keeps its own name."""
    labels: list[str] = []
    for spec in specs:
        if Path(spec).expanduser().is_file():
            labels.append("")
            continue
        base = input_root(spec).name or "input"
        label, n = base, 2
        while label in labels:
            label, n = f"{base}-{n}", n + 1
        labels.append(label)
    return labels


def find_inputs(specs: list[str], exclude: list[Path] = (), output_dir: Path | None = None) -> Inputs:
    """Every file to read, sorted per input so runs are reproducible, and what was left alone."""
    found = Inputs()
    if not specs:
        raise ConfigError("input is required: pass input=FILE, input=DIR, input='GLOB' or input.paths=[A,B]")
    labels = _labels(specs) if len(specs) > 1 else [""]
    seen: set[Path] = set()
    for spec, label in zip(specs, labels):
        path = Path(spec).expanduser()
        if output_dir is not None and (path.exists() or _WILDCARDS & set(spec)) \
                and input_root(spec).is_relative_to(Path(output_dir).resolve()):
            raise ConfigError(f"output.dir={str(output_dir)!r} is the input's folder or holds it (input={spec!r}): "
                              "outputs would land among the inputs they come from; give output.dir a folder "
                              "outside it")
        files = _one(spec, found)
        matched = len(files)
        for folder in exclude:    # never read our own output back in
            folder = Path(folder).resolve()
            files = [f for f in files if not f.path.resolve().is_relative_to(folder)]
        files = [f for f in files if not _in_a_run_folder(f)]
        if not files:
            what = f"its {matched} file(s) are all output of this tool (inside output.dir, this run's folder or " \
                   "an earlier run's folder), which is never read back in" if matched else "matched no files to read"
            raise ConfigError(f"input={spec!r}: {what}" + (f"; not read: {_said(found.not_read)}"
                                                          if found.not_read and not matched else ""))
        for f in files:
            if f.path.resolve() not in seen:       # two inputs that overlap: each file read once
                seen.add(f.path.resolve())
                found.files.append(InputFile(f.path, Path(label) / f.relative if label else f.relative))
    named = {}
    for f in found.files:
        if named.setdefault(f.relative, f.path) != f.path:
            raise ConfigError(f"{named[f.relative]} and {f.path} would both be written as {f.relative}: give "
                              "their folders as the inputs instead (each is mirrored under its own name)")
    return found


def _said(not_read: list[tuple[str, str]], most: int = 3) -> str:
    shown = "; ".join(f"{path} ({why})" for path, why in not_read[:most])
    return shown + (f" and {len(not_read) - most} more" if len(not_read) > most else "")


def resolve_inputs(spec: str, exclude: list[Path] = (), output_dir: Path | None = None) -> list[InputFile]:
    """The files one input names (find_inputs for several, and for what is not read)."""
    return find_inputs([spec], exclude, output_dir).files
