"""Resume a session in the real agent that wrote it, offline, and say what the agent sent.

    python -m testkit.resume SESSION.jsonl [--agent auto|claude|pi]

The pinned Claude Code or pi (`make agents`) resumes the session in print mode
against the fake Anthropic API of the tests (agent_api.py, on 127.0.0.1), which
refuses what the real API refuses. The request that carried the session is what
the agent loaded: printed as its messages' roles and first words, with any
refused request and its reason. Exit status 0 when the agent loaded the session
and no request was refused. The session file is not changed (the agent resumes
a copy in a throwaway home).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from testkit.agent_api import AgentAPI
from testkit.agents import Resumed, resume_claude, resume_pi

PREVIEW = 100    # characters of each message shown


def agent_of(path: Path) -> str:
    """pi when the log's lines are pi entries (a session header, or messages chained by parentId), else Claude Code."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                return "pi" if entry.get("type") == "session" or "parentId" in entry else "claude"
    raise SystemExit(f"{path}: no JSON line: not a session log")


def _preview(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(block.get("text") or block.get("type")) for block in content if isinstance(block, dict))
    text = " ".join(str(content).split())
    return text[:PREVIEW] + ("…" if len(text) > PREVIEW else "")


def report(resumed: Resumed) -> list[str]:
    lines = [f"{i:4d} {m.get('role')}: {_preview(m)}" for i, m in enumerate(resumed.conversation)]
    lines.append(f"{len(resumed.conversation)} message(s) sent; agent exit status {resumed.returncode}")
    lines += [f"refused ({r.status}): {r.problem}" for r in resumed.refused]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("--agent", choices=("auto", "claude", "pi"), default="auto")
    args = parser.parse_args(argv)
    if not args.session.is_file():
        parser.error(f"{args.session}: no such file")
    agent = agent_of(args.session) if args.agent == "auto" else args.agent
    resume = resume_pi if agent == "pi" else resume_claude
    with AgentAPI() as api, tempfile.TemporaryDirectory(prefix="hermes-resume-") as tmp:
        resumed = resume(args.session, api, Path(tmp))
    print("\n".join(report(resumed)))
    if resumed.returncode != 0:
        print(resumed.output[-2000:], file=sys.stderr)
    return 0 if resumed.returncode == 0 and not resumed.refused and resumed.conversation else 1


if __name__ == "__main__":
    sys.exit(main())
