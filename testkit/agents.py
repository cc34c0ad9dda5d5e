"""The real agents, resuming a session in print mode against the fake Anthropic API
(hermes_pipeline/testing/fake_agent_api.py).

`make agents` installs the pinned Claude Code and pi into agents/node_modules
(CI's `make test` does it first); a missing install fails the test, naming the
command, rather than skipping it. Each agent runs in a throwaway home: Claude
Code with HOME and CLAUDE_CONFIG_DIR there, the session file in the project
folder of the working directory (`projects/<cwd with non-alphanumerics as ->/
<session id>.jsonl`, where `--resume <id>` looks), `ANTHROPIC_BASE_URL` at the
fake API and `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`; pi with
`PI_CODING_AGENT_DIR` holding a models.json whose one provider is the fake API
(Anthropic Messages, a context window large enough that pi never compacts on its
own: what it sends is what it loaded), `--offline --session FILE -p`. pi refuses a session whose
header names a working directory that does not exist: the copy it opens names
the temporary one instead (the only byte changed).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from hermes_pipeline.testing.fake_agent_api import AgentAPI
from hermes_pipeline.testing.http_server import Request
from testkit.env import ROOT

AGENTS = ROOT / "agents" / "node_modules" / ".bin"
PROMPT = "continue"
TIMEOUT = 300


def agent(name: str) -> Path:
    path = AGENTS / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make agents` (it installs the pinned Claude Code and pi from "
                    "agents/package-lock.json; `make test` does it first)")
    return path


@dataclass
class Resumed:
    returncode: int
    output: str
    requests: list[Request]
    unit = "message"             # what `conversation` holds, as testkit.resume counts it

    @property
    def refused(self) -> list[Request]:
        return [r for r in self.requests if r.status != 200]

    @property
    def conversation(self) -> list[dict]:
        """The messages of the request that carried the session (the one with the most)."""
        chats = [messages_of(r) for r in self.requests if r.status == 200 and messages_of(r)]
        return max(chats, key=len) if chats else []

    @property
    def size(self) -> int:
        return len(json.dumps(self.conversation))


def messages_of(request: Request) -> list[dict]:
    return request.body.get("messages", []) if isinstance(request.body, dict) else []


def _run(command: list[str], cwd: Path, env: dict, api: AgentAPI) -> Resumed:
    api.clear()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    return Resumed(done.returncode, done.stdout + done.stderr, list(api.requests))


def _base_env(home: Path) -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


def session_id_of(path: Path) -> str:
    """The Claude Code session id a log's lines carry (the file may be named otherwise)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            return value["sessionId"]
    raise AssertionError(f"{path}: no sessionId in any line")


def resume_claude(session: Path, api: AgentAPI, tmp: Path) -> Resumed:
    home, cwd = tmp / "home", tmp / "work"
    cwd.mkdir(parents=True, exist_ok=True)
    config = home / ".claude"
    project = config / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd.resolve()))
    project.mkdir(parents=True, exist_ok=True)
    session_id = session_id_of(session)
    shutil.copyfile(session, project / f"{session_id}.jsonl")
    env = {**_base_env(home), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": api.base_url,
           "ANTHROPIC_API_KEY": "sk-ant-fake-for-tests", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1"}
    return _run([str(agent("claude")), "-p", PROMPT, "--resume", session_id], cwd, env, api)


def resume_pi(session: Path, api: AgentAPI, tmp: Path) -> Resumed:
    home, cwd, agent_dir = tmp / "home", tmp / "work", tmp / "pi-agent"
    for folder in (home, cwd, agent_dir):
        folder.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": api.base_url, "api": "anthropic-messages", "apiKey": "fake-key",
        "models": [{"id": "fake-model", "contextWindow": 1_000_000, "maxTokens": 8000}]}}}))
    lines = session.read_bytes().split(b"\n")
    header = json.loads(lines[0])
    if header.get("type") == "session" and isinstance(header.get("cwd"), str):
        header["cwd"] = str(cwd)
        lines[0] = json.dumps(header).encode()
    copy = tmp / "session.jsonl"
    copy.write_bytes(b"\n".join(lines))
    env = {**_base_env(home), "PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1"}
    command = [str(agent("pi")), "--offline", "--provider", "fake", "--model", "fake-model", "--no-extensions",
               "--no-skills", "--no-prompt-templates", "--no-context-files", "--session", str(copy), "-p", PROMPT]
    return _run(command, cwd, env, api)
