"""Which files a run reads, and the name each one's output gets."""
from __future__ import annotations

import functools
import glob
from dataclasses import dataclass
from pathlib import Path

from hermes_pipeline.config import ConfigError

_WILDCARDS = set("*?[")


@dataclass(frozen=True)
class InputFile:
    path: Path
    relative: Path      # mirrored under transcripts/


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
    return _static_prefix(spec).resolve()


def resolve_inputs(spec: str, exclude: list[Path] = (), output_dir: Path | None = None) -> list[InputFile]:
    """A file, every *.jsonl under a directory, or a glob; sorted, so runs are reproducible."""
    path = Path(spec).expanduser()
    if output_dir is not None and (path.exists() or _WILDCARDS & set(spec)) \
            and input_root(spec).is_relative_to(Path(output_dir).resolve()):
        raise ConfigError(f"output.dir={str(output_dir)!r} is the input's folder or holds it (input={spec!r}): "
                          "outputs would land among the inputs they come from; give output.dir a folder outside it")
    if path.is_file():
        found = [InputFile(path, Path(path.name))]
    elif path.is_dir():
        found = [InputFile(p, p.relative_to(path)) for p in sorted(path.rglob("*.jsonl")) if p.is_file()]
    elif _WILDCARDS & set(spec):
        root = _static_prefix(spec)
        found = [InputFile(Path(p), Path(p).relative_to(root) if Path(p).is_relative_to(root) else Path(Path(p).name))
                 for p in sorted(glob.glob(spec, recursive=True)) if Path(p).is_file()]
    else:
        raise ConfigError(f"input={spec!r}: no such file or directory")
    matched = len(found)
    for folder in exclude:    # never read our own output back in
        folder = Path(folder).resolve()
        found = [f for f in found if not f.path.resolve().is_relative_to(folder)]
    found = [f for f in found if not _in_a_run_folder(f)]
    if not found and matched:
        raise ConfigError(f"input={spec!r}: its {matched} .jsonl file(s) are all output of this tool (inside "
                          "output.dir, this run's folder or an earlier run's folder), which is never read back in")
    if not found:
        raise ConfigError(f"input={spec!r} matched no .jsonl files")
    return found
