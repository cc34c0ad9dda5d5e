"""Resume a session in the real agent that wrote it, offline, and say what the agent sent.

    python -m testkit.resume SESSION.jsonl [--agent auto|claude|pi|codex]

The pinned Claude Code or pi (`make agents`) resumes the session in print mode
against the fake Anthropic API of the tests (testing/fake_agent_api.py, on
127.0.0.1), which refuses what the real API refuses; the pinned Codex CLI
resumes a rollout against the fake Responses API (testing/fake_responses.py),
in a CODEX_HOME that points the rollout's own provider there (the built-in
`openai` one of real rollouts through `openai_base_url`: Codex refuses to change
a thread's provider). What the agent loaded is what it sent: printed as its
messages' (or Codex's history items') roles and first words, with any refused
request and its reason. Exit status 0 when the agent loaded the session and no
request was refused. The session file is not changed (the agent resumes a copy
in a throwaway home).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from hermes_pipeline.testing.fake_agent_api import AgentAPI
from hermes_pipeline.testing.fake_responses import FakeResponses
from testkit.agents import Resumed, resume_claude, resume_pi
from testkit.codex_cli import resume_codex

PREVIEW = 100    # characters of each message shown


def agent_of(path: Path) -> str:
    """Codex when the file starts with a rollout's session_meta; pi when the log's lines are pi entries (a session
    header, or messages chained by parentId); else Claude Code."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                if entry.get("type") == "session_meta":
                    return "codex"
                return "pi" if entry.get("type") == "session" or "parentId" in entry else "claude"
    raise SystemExit(f"{path}: no JSON line: not a session log")


def _text(message: dict) -> str:
    """A message's text, or what a Codex item other than a message says (a call, its output, a reasoning summary)."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(block.get("text") or block.get("type")) for block in content if isinstance(block, dict))
    if content is not None:
        return str(content)
    parts = [message.get(key) for key in ("name", "arguments", "input", "output")]
    parts += [part.get("text") for part in message.get("summary") or () if isinstance(part, dict)]
    return " ".join(part if isinstance(part, str) else json.dumps(part) for part in parts if part)


def _preview(message: dict) -> str:
    text = " ".join(_text(message).split())
    return text[:PREVIEW] + ("…" if len(text) > PREVIEW else "")


def report(resumed: Resumed) -> list[str]:
    lines = [f"{i:4d} {m.get('role') or m.get('type')}: {_preview(m)}" for i, m in enumerate(resumed.conversation)]
    lines.append(f"{len(resumed.conversation)} {resumed.unit}(s) sent; agent exit status {resumed.returncode}")
    lines += [f"refused ({r.status}): {r.problem}" for r in resumed.refused]
    return lines


def resume_in(agent: str, session: Path, tmp: Path) -> Resumed:
    if agent == "codex":
        with FakeResponses(calls_per_turn=0) as fake:       # answers at once: the one request carries the history
            return resume_codex(session, fake, tmp)
    with AgentAPI() as api:
        return (resume_pi if agent == "pi" else resume_claude)(session, api, tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("--agent", choices=("auto", "claude", "pi", "codex"), default="auto")
    args = parser.parse_args(argv)
    if not args.session.is_file():
        parser.error(f"{args.session}: no such file")
    agent = agent_of(args.session) if args.agent == "auto" else args.agent
    with tempfile.TemporaryDirectory(prefix="hermes-resume-") as tmp:
        resumed = resume_in(agent, args.session, Path(tmp))
    print("\n".join(report(resumed)))
    if resumed.returncode != 0:
        print(resumed.output[-2000:], file=sys.stderr)
    return 0 if resumed.returncode == 0 and not resumed.refused and resumed.conversation else 1


if __name__ == "__main__":
    sys.exit(main())
