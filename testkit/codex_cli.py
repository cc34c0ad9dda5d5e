"""The real Codex CLI (agents/, `make agents`), run offline against the fake Responses API.

`record_session` drives a session through several prompts (`codex exec`, then
`codex exec resume --last`), with a low auto-compact limit so Codex compacts on
its own; `resume` loads a rollout into a fresh CODEX_HOME and sends one more
prompt, which shows what history Codex rebuilt from it (the fake keeps every
request). Sandboxing is bypassed: the commands are the fake's own, in a
temporary folder.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hermes_pipeline.formats.codex_rollout import is_context_message
from testkit.fake_responses import CODEX, FakeResponses, codex_home, rollouts

TIMEOUT = 180


def need_codex() -> Path:
    if not CODEX.exists():
        pytest.skip(f"{CODEX} is absent: `make agents` installs the real agents (needs npm)")
    return CODEX


def run_codex(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CODEX_HOME=str(home), FAKE_CODEX_KEY="offline", NO_COLOR="1")
    command = [str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", *args]
    result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RuntimeError(f"codex {' '.join(args)[:80]} exited {result.returncode}: {result.stderr[-2000:]}")
    return result


def record_session(folder: Path, fake: FakeResponses, prompts: list[str], auto_compact_limit: int,
                   last_prompts: tuple[str, ...] = (), last_output_size: int | None = None) -> Path:
    """A real rollout of `prompts`, one Codex turn each; its path. `last_prompts` run after the auto-compact
    limit is lifted (and the fake's output size changed), so the session ends on a long history, as real
    sessions mostly do, rather than just after a compaction."""
    home = codex_home(folder / "home", fake.base_url, auto_compact_limit=auto_compact_limit)
    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    run_codex(home, work, prompts[0])
    for prompt in prompts[1:]:
        run_codex(home, work, "resume", "--last", prompt)
    if last_prompts:
        codex_home(home, fake.base_url, auto_compact_limit=auto_compact_limit * 20)
        fake.output_size = last_output_size or fake.output_size
    for prompt in last_prompts:
        run_codex(home, work, "resume", "--last", prompt)
    found = rollouts(home)
    assert len(found) == 1, found
    return found[0]


def resume(folder: Path, fake: FakeResponses, rollout: Path, relative: Path, prompt: str) -> list[dict]:
    """Load `rollout` (placed at `relative` under sessions/) in a fresh CODEX_HOME, send `prompt`;
    the requests Codex made."""
    home = codex_home(folder / "home", fake.base_url)
    target = home / "sessions" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(rollout, target)
    session = json.loads(target.open().readline())["payload"]["id"]
    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    before = len(fake.requests)
    run_codex(home, work, "resume", session, prompt)
    return fake.requests[before:]


def session_path(rollout: Path) -> Path:
    """Where Codex keeps a rollout, under sessions/: YYYY/MM/DD from its file name."""
    day = rollout.name.removeprefix("rollout-")[:10].split("-")
    return Path(*day) / rollout.name


def sent_history(folder: Path, fake: FakeResponses, rollout: Path) -> list[dict]:
    """The items Codex sends after its base instructions when it resumes `rollout`: the history it rebuilt
    (the new turn's context and prompt, at the end, left out)."""
    requests = resume(folder, fake, rollout, session_path(rollout), PROBE)
    items = requests[0]["input"][1:]
    start = max(i for i, item in enumerate(items) if item.get("role") == "user")     # the probe prompt
    while start > 0 and is_context_message(items[start - 1]):
        start -= 1       # the instructions and environment Codex puts before each new turn
    return items[:start]


PROBE = "Probe: what comes next?"
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "codex"


def main() -> None:
    """Record the committed fixtures again: `python -m testkit.codex_cli` (needs `make agents`)."""
    import tempfile
    FIXTURES.mkdir(parents=True, exist_ok=True)
    prompts = ["Inspect the workspace and write notes", "Count the lines of the notes",
               "Look for beta in the notes", "List what changed", "Check the rows report", "Wrap up"]
    with tempfile.TemporaryDirectory() as tmp, FakeResponses(calls_per_turn=3, output_size=240) as fake:
        rollout = record_session(Path(tmp) / "record", fake, prompts, auto_compact_limit=11000,
                                 last_prompts=("Show the long report",), last_output_size=2500)
        for old in FIXTURES.glob("rollout-*"):
            old.unlink()
        target = FIXTURES / rollout.name
        shutil.copyfile(rollout, target)
        sent = sent_history(Path(tmp) / "probe", fake, target)
        target.with_suffix(".sent.json").write_text(json.dumps(sent, indent=1) + "\n")
    print(f"{target} ({target.stat().st_size} bytes) and what Codex sends when it resumes it")


if __name__ == "__main__":
    main()
