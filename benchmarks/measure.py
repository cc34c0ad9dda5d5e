"""Measuring child processes side by side, and the figures the report is made of.

The machine is small and shared, so nothing here is an absolute speed: each
figure is a ratio of runs made in the same bench run, paired (A then B, then
B then A, ...) and summarised by the median of the per-pair ratios. Wall time,
CPU time and peak RSS of a child come from os.wait4 in a small launcher
process, which reports that child alone (plus the descendants it waited for).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"          # git-ignored; generated inputs are cached here between runs
WORK = DATA / "work"                # run folders and output trees of this bench run
PY = sys.executable
REPEATS = int(os.environ.get("HERMES_BENCH_REPEATS", "3"))


@dataclass
class Run:
    wall: float          # seconds
    cpu: float           # user + system seconds of the child and the descendants it waited for
    rss_mib: float       # peak RSS of the largest single process among them
    code: int
    run_dir: Path | None = None

    def summary(self) -> dict:
        return json.loads((self.run_dir / "summary.json").read_text())


# A child's ru_maxrss starts at its parent's peak RSS (Linux keeps the old image's high-water mark
# across fork and exec), and this process grows (it generates inputs). So every command is started
# by a fresh, small Python that waits for it and reports its usage: the command's own figures.
_LAUNCHER = """
import json, os, subprocess, sys, time
with open(sys.argv[1], "wb") as out:
    started = time.perf_counter()
    proc = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
print(json.dumps([wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status)]))
"""


# Commands run as an installed package runs: with its compiled bytecode cached (pip compiles it on
# install). A shell that sets PYTHONDONTWRITEBYTECODE would make every run compile ~150 modules again.
_AS_INSTALLED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def child(command: list[str], log: Path | None = None, ok: tuple[int, ...] = (0,), env: dict | None = None,
          cwd: Path = ROOT) -> Run:
    """Run a command to completion; its wall, CPU (with the descendants it waited for) and peak RSS."""
    log = log or WORK / "last-child.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    found = subprocess.run([PY, "-c", _LAUNCHER, str(log), *map(str, command)], cwd=cwd, check=True,
                           capture_output=True, text=True, env={**_AS_INSTALLED, **(env or {})})
    wall, cpu, rss_kib, code = json.loads(found.stdout)
    if code not in ok:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"exit {code}: {' '.join(map(str, command))}\n{tail}")
    return Run(wall, cpu, rss_kib / 1024, code)


def cli(run_dir: Path, *overrides: str, env: dict | None = None, cwd: Path | None = None) -> Run:
    """The real command line (run from `cwd`: the package found first is that tree's); exit 2 (something
    quarantined) is a normal outcome on real data."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    command = [PY, "-m", "hermes_pipeline", f"hydra.run.dir={run_dir}", "progress=none", "quiet=true", *overrides]
    run = child(command, log=run_dir.parent / f"{run_dir.name}.log", ok=(0, 2), env=env, cwd=cwd or ROOT)
    run.run_dir = run_dir
    return run


def cli_side_by_side(run_dirs: list[Path], *overrides: str) -> float:
    """Wall seconds until the same command line, started at once in each run folder, has finished in all."""
    for run_dir in run_dirs:
        if run_dir.exists():
            shutil.rmtree(run_dir)
    started = time.perf_counter()
    procs = [subprocess.Popen([PY, "-m", "hermes_pipeline", f"hydra.run.dir={run_dir}", "progress=none",
                               "quiet=true", *overrides], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for run_dir in run_dirs]
    codes = [proc.wait() for proc in procs]
    wall = time.perf_counter() - started
    if any(code not in (0, 2) for code in codes):
        raise RuntimeError(f"exit {codes}: side by side {' '.join(overrides)}")
    return wall


def baseline(source: Path, target: Path) -> Run:
    """Read, parse and re-write the same files with orjson, nothing else (benchmarks/baseline_copy.py)."""
    if target.exists():
        shutil.rmtree(target)
    return child([PY, str(ROOT / "benchmarks" / "baseline_copy.py"), str(source), str(target)])


def cli_command(*overrides: str) -> str:
    """How to reproduce a measured run by hand, from the checkout (paths under it and beside it relative)."""
    here, beside = f"{ROOT}/", f"{ROOT.parent}/"
    return ".venv/bin/hermes-pipeline " + " ".join(o.replace(here, "").replace(beside, "../") for o in overrides)


@dataclass
class Pair:
    """Runs of A and B made alternately; ratios are B over A, per pair, then the median."""
    a: list[Run] = field(default_factory=list)
    b: list[Run] = field(default_factory=list)

    def ratio(self, what: str = "wall") -> float:
        return statistics.median(getattr(y, what) / getattr(x, what) for x, y in zip(self.a, self.b))

    def best_ratio(self, what: str = "wall") -> float:
        """The least B over the least A: best of N on each side."""
        return min(getattr(r, what) for r in self.b) / min(getattr(r, what) for r in self.a)

    def best(self, side: str, what: str = "wall") -> float:
        return min(getattr(r, what) for r in getattr(self, side))

    def median(self, side: str, what: str = "wall") -> float:
        return statistics.median(getattr(r, what) for r in getattr(self, side))

    def describe(self) -> dict:
        return {side: [{"wall": round(r.wall, 3), "cpu": round(r.cpu, 3), "rss_mib": round(r.rss_mib, 1)}
                       for r in getattr(self, side)] for side in ("a", "b")}


def paired(first: Callable[[int], Run], second: Callable[[int], Run], repeats: int = REPEATS) -> Pair:
    pair = Pair()
    for i in range(repeats):
        if i % 2:        # alternate the order: a slow drift of the machine's load hits both sides
            y = second(i)
            x = first(i)
        else:
            x = first(i)
            y = second(i)
        pair.a.append(x)
        pair.b.append(y)
    return pair


def median_run(run: Callable[[int], Run], repeats: int = REPEATS) -> Run:
    runs = [run(i) for i in range(repeats)]
    return Run(*(statistics.median(getattr(r, k) for r in runs) for k in ("wall", "cpu", "rss_mib")), 0)


SPIN = "n=0\nfor i in range(6_000_000): n += i"


def _spins(together: bool) -> Run:
    """A fixed pure-Python loop done twice: one copy after the other, or both copies at once."""
    started = time.perf_counter()
    if together:
        for proc in [subprocess.Popen([PY, "-c", SPIN]) for _ in range(2)]:
            proc.wait()
    else:
        for _ in range(2):
            subprocess.run([PY, "-c", SPIN], check=True)
    return Run(time.perf_counter() - started, 0, 0, 0)


QUIET = 1.6     # a pair counts when two processes of plain Python gained at least this much beside it


def parallel_paired(one: Callable[[int], Run], two: Callable[[int], Run], want: int = REPEATS,
                    most: int = REPEATS + 5) -> tuple[Pair, Pair, int]:
    """Runs with one and with two workers, each pair next to a sample of what two processes gain on this
    machine right now: other work on it comes and goes, and a pair made while it held a core says
    nothing about the runner. Pairs are made until `want` were quiet (or `most` were made); speed-ups
    are then best of N on each side over the quiet pairs (all pairs if none was).
    Returns (the runs, the capacity samples, how many pairs were made)."""
    pair, capacity = Pair(), Pair()
    made = 0
    while made < most and len(_quiet(capacity)) < want:
        capacity.a.append(_spins(False))
        capacity.b.append(_spins(True))
        if made % 2:
            pair.b.append(two(made))
            pair.a.append(one(made))
        else:
            pair.a.append(one(made))
            pair.b.append(two(made))
        made += 1
    quiet = _quiet(capacity) or list(range(made))
    pick = lambda p: Pair([p.a[i] for i in quiet], [p.b[i] for i in quiet])
    return pick(pair), pick(capacity), made


def _quiet(capacity: Pair) -> list[int]:
    """Pairs beside which two processes gained at least QUIET (serial time / time together)."""
    return [i for i, (x, y) in enumerate(zip(capacity.a, capacity.b)) if x.wall / y.wall >= QUIET]


# -- figures -----------------------------------------------------------------------------------

def figure(area: str, name: str, value, target: tuple[str, float] | None = None,
           stretch: tuple[str, float] | None = None, unit: str = "", note: str = "") -> dict:
    """One row of the report; `met` is None when the issue sets no target for it."""
    def holds(bound):
        if bound is None or value is None:
            return None
        op, limit = bound
        return {"<=": value <= limit, ">=": value >= limit, "=": value == limit}[op]
    rounded = round(value, 4) if isinstance(value, float) else value
    return {"area": area, "figure": name, "value": rounded, "unit": unit,
            "target": f"{target[0]} {target[1]:g}" if target else None, "met": holds(target),
            "stretch": f"{stretch[0]} {stretch[1]:g}" if stretch else None, "stretch_met": holds(stretch),
            "note": note}


def fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link (no bytes copied, same size and mtime) where the file system allows it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def cached(path: Path, build: Callable[[Path], None], recipe: str) -> Path:
    """Generated input kept between bench runs; rebuilt when its recipe changes or it is half-written."""
    stamp = path.with_name(path.name + ".recipe")
    if path.exists() and stamp.exists() and stamp.read_text() == recipe:
        return path
    partial = path.with_name(path.name + ".partial")
    for old in (path, partial):
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    build(partial)
    partial.rename(path)
    stamp.write_text(recipe)
    print(f"  generated {path.relative_to(ROOT)} in {time.perf_counter() - started:.1f} s", flush=True)
    return path


def size_of(source: Path) -> int:
    return source.stat().st_size if source.is_file() else sum(p.stat().st_size for p in source.rglob("*.jsonl"))
