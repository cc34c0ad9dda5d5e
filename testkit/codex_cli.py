"""The real Codex CLI (agents/, `make agents`), run offline against the fake Responses API.

`record_session` drives a session through several prompts (`codex exec`, then
`codex exec resume --last`), with a low auto-compact limit so Codex compacts on
its own; `resume` loads a rollout into a fresh CODEX_HOME and sends one more
prompt, which shows what history Codex rebuilt from it (the fake keeps every
request); `resume_codex` is that for `python -m testkit.resume`. Sandboxing is
bypassed: the commands are the fake's own, in a temporary folder.

Codex refuses to change a thread's model provider on resume ("Cannot change this
thread's model provider"), so the CODEX_HOME configures the provider the rollout
names: ours, recorded against the fake, name a custom one (`fake`); real ones
name the built-in `openai`, which `openai_base_url` points at the fake.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hermes_pipeline.formats.codex.rollout import is_context_message
from hermes_pipeline.testing.fake_responses import FakeResponses
from testkit.agents import PROMPT, Resumed
from testkit.env import ROOT

CODEX = ROOT / "agents" / "node_modules" / ".bin" / "codex"
TIMEOUT = 180
BUILT_IN = "openai"          # the provider real rollouts name; one that names none is taken to be of it
DEFAULT_MODEL = "gpt-5.5"
# a window no rollout fills: Codex never compacts on its own while it resumes, so what it sends is what it loaded
NO_COMPACTION = 100_000_000


def need_codex() -> Path:
    if not CODEX.exists():
        pytest.skip(f"{CODEX} is absent: `make agents` installs the real agents (needs npm)")
    return CODEX


def run_codex(home: Path, work: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CODEX_HOME=str(home), FAKE_CODEX_KEY="offline", NO_COLOR="1")
    command = [str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", *args]
    result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                            stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise RuntimeError(f"codex {' '.join(args)[:80]} exited {result.returncode}: {result.stderr[-2000:]}")
    return result


def codex_home(folder: Path, base_url: str, auto_compact_limit: int | None = None,
               context_window: int | None = None, model: str = DEFAULT_MODEL, provider: str = "fake") -> Path:
    """A CODEX_HOME whose config.toml sends every request to `base_url`: through the custom provider
    `provider` (key from FAKE_CODEX_KEY), or the built-in `openai` one pointed there."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f'model = "{model}"', f'model_provider = "{provider}"']
    if auto_compact_limit is not None:
        lines.append(f"model_auto_compact_token_limit = {auto_compact_limit}")
    if context_window is not None:
        lines.append(f"model_context_window = {context_window}")
    if provider == BUILT_IN:
        lines.append(f'openai_base_url = "{base_url}"')
    else:
        lines += ["", f'[model_providers."{provider}"]', f'name = "{provider}"', f'base_url = "{base_url}"',
                  'env_key = "FAKE_CODEX_KEY"', 'wire_api = "responses"', "request_max_retries = 0",
                  "stream_max_retries = 0"]
    (folder / "config.toml").write_text("\n".join(lines) + "\n")
    return folder


def thread_of(rollout: Path) -> tuple[dict, str]:
    """The rollout's session_meta (its first line) and the model of its last turn."""
    lines = rollout.read_text(encoding="utf-8").splitlines()
    meta = json.loads(lines[0]) if lines else {}
    if meta.get("type") != "session_meta":
        raise ValueError(f"{rollout}: not a Codex rollout (its first line is not the session_meta)")
    model = DEFAULT_MODEL
    for line in lines:
        if '"turn_context"' in line and (value := json.loads(line)).get("type") == "turn_context":
            model = value["payload"].get("model") or model
    return meta["payload"], model


def rollouts(home: Path) -> list[Path]:
    return sorted((home / "sessions").rglob("rollout-*.jsonl"))


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


def _resume_run(folder: Path, fake: FakeResponses, rollout: Path, relative: Path, prompt: str, check: bool = True,
                compaction: bool = True) -> subprocess.CompletedProcess:
    """Codex, in a fresh CODEX_HOME configured for the rollout's provider and model, resuming `rollout` (placed
    at `relative` under sessions/) with `prompt`; with its own compaction kept off unless `compaction`."""
    meta, model = thread_of(rollout)
    limit = None if compaction else NO_COMPACTION
    home = codex_home(folder / "home", fake.base_url, model=model, provider=meta.get("model_provider") or BUILT_IN,
                      context_window=limit, auto_compact_limit=limit)
    target = home / "sessions" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(rollout, target)
    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    return run_codex(home, work, "resume", meta["id"], prompt, check=check)


def resume(folder: Path, fake: FakeResponses, rollout: Path, relative: Path, prompt: str) -> list[dict]:
    """Load `rollout` (placed at `relative` under sessions/) in a fresh CODEX_HOME, send `prompt`;
    the requests Codex made."""
    before = len(fake.requests)
    _resume_run(folder, fake, rollout, relative, prompt)
    return fake.requests[before:]


def session_path(rollout: Path) -> Path:
    """Where Codex keeps a rollout, under sessions/: YYYY/MM/DD from its file name (Codex finds a thread by the
    file's name); a file named otherwise is placed under the name Codex would give it."""
    if not re.fullmatch(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-.+\.jsonl", rollout.name):
        meta, _ = thread_of(rollout)
        rollout = Path(f"rollout-{meta['timestamp'][:19].replace(':', '-')}-{meta['id']}.jsonl")
    day = rollout.name.removeprefix("rollout-")[:10].split("-")
    return Path(*day) / rollout.name


def history_of(items: list[dict]) -> list[dict]:
    """The items of a resumed request after Codex's base instructions and before the new turn (its context
    and prompt, at the end): the history Codex rebuilt from the rollout."""
    items = items[1:]
    start = max((i for i, item in enumerate(items) if item.get("role") == "user"), default=len(items))  # the prompt
    while start > 0 and is_context_message(items[start - 1]):
        start -= 1       # the instructions and environment Codex puts before each new turn
    return items[:start]


def sent_history(folder: Path, fake: FakeResponses, rollout: Path) -> list[dict]:
    """The history Codex sends when it resumes `rollout` (history_of its first request)."""
    return history_of(resume(folder, fake, rollout, session_path(rollout), PROBE)[0]["input"])


class CodexResumed(Resumed):
    unit = "history item"

    @property
    def conversation(self) -> list[dict]:
        """The history Codex rebuilt from the rollout: what its first request carried before the new turn."""
        answered = [r for r in self.requests if r.status == 200 and isinstance(r.body, dict)]
        return history_of(answered[0].body.get("input") or []) if answered else []


def resume_codex(rollout: Path, fake: FakeResponses, tmp: Path) -> CodexResumed:
    """The real Codex CLI resuming `rollout` against `fake` with the agents' PROMPT; what it sent, and its exit.
    The rollout is not changed (Codex resumes a copy, in a throwaway CODEX_HOME)."""
    need_codex()
    before = len(fake.server.requests)
    done = _resume_run(tmp, fake, rollout, session_path(rollout), PROMPT, check=False, compaction=False)
    calls = [r for r in fake.server.requests[before:] if r.method == "POST"]
    return CodexResumed(done.returncode, done.stdout + done.stderr, calls)


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
