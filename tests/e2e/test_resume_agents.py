"""Our compacted sessions, resumed in the real agent that wrote them (issue 19).

Each shared Claude Code and pi session is compacted through the real command line,
with the defaults and at model.context_length=32000, written back in its own format
(history=keep), and resumed in print mode by the pinned Claude Code / pi against a
fake Anthropic API on 127.0.0.1 that refuses (400) what the real API refuses. The
request the agent sent is what it loaded; it must be exactly our summary and our
kept messages, in order (testkit/resume_checks.py), with no request refused,
and smaller than the request the agent sends for the original session. A session the run left
unchanged is the input, byte for byte. Besides the two contexts the issue names,
a small one (8,000) compacts the short corpus logs too.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_pipeline.formats import CONVERSATION
from hermes_pipeline.formats.anthropic import to_anthropic
from hermes_pipeline.testing.fake_agent_api import AgentAPI
from hermes_pipeline.transcript import SUMMARY_PREFIX
from testkit.agents import Resumed, resume_claude, resume_pi
from testkit.env import CORPUS, LONG_SESSIONS, read_jsonl, run_cli, shared
from testkit.pi_logs import version_1_of
from testkit.resume_checks import claude_code_expected, mismatch, pi_expected, request_blocks, user_texts
from testkit.sessions import read_conversations

CONTEXTS = {"defaults": (), "32k": ("model.context_length=32000",),
            "small": ("model.context_length=8000", "compression.protect_last_n=4"),   # the short corpus logs too
            "32k-drop": ("model.context_length=32000", "output.native.history=drop")}   # only what resumes
CLAUDE_CODE = {"claude-code-viewer": CORPUS / "claude-code-viewer",
               "claude-reliability": CORPUS / "claude-reliability",
               "vsla": LONG_SESSIONS / "vsla-claude-sessions"}
PI = {"agent-complex-task": LONG_SESSIONS / "agent-complex-task"}
AGENTS = {"claude-code": (resume_claude, claude_code_expected), "pi": (resume_pi, pi_expected)}
# sessions each case compacts at least (the others stay under the threshold: written back unchanged)
COMPACTED = {("claude-reliability", "32k"): 1, ("vsla", "32k"): 3, ("agent-complex-task", "32k"): 1,
             ("vsla", "32k-drop"): 3, ("agent-complex-task", "32k-drop"): 1,
             ("claude-reliability", "small"): 2, ("claude-code-viewer", "small"): 3}


@pytest.fixture(scope="module")
def api():
    with AgentAPI() as server:
        yield server


@pytest.fixture(scope="module")
def originals(api, tmp_path_factory):
    """What each agent sends for an original session, resumed once per module."""
    cache: dict[Path, Resumed] = {}

    def resumed(agent: str, path: Path) -> Resumed:
        if path not in cache:
            cache[path] = AGENTS[agent][0](path, api, tmp_path_factory.mktemp("original"))
            assert cache[path].returncode == 0 and not cache[path].refused, cache[path].output[-2000:]
        return cache[path]
    return resumed


def compact_and_resume(agent: str, folder: Path, context: tuple, api: AgentAPI, originals, tmp_path: Path) -> int:
    """Compact a folder, resume every output in the agent; the number of compacted sessions checked."""
    shared(folder)
    run_dir = tmp_path / "run"
    result = run_cli(run_dir, f"input={folder}", *context)
    assert result.returncode in (0, 2), result.stderr
    resume, expected_of = AGENTS[agent]
    checked = 0
    for row in read_jsonl(run_dir / "manifest.jsonl"):
        if row["status"] == "quarantined":
            continue
        source = Path(row["source"].rsplit(":", 1)[0])
        out = run_dir / "transcripts" / source.relative_to(folder)
        if row["status"] == "unchanged":      # the input itself, which the agent loads as it always did
            kept_lines = out.read_bytes().splitlines()
            assert kept_lines == [line for line in source.read_bytes().splitlines() if line.strip()], out
            continue
        assert row["status"] == "compacted" and row["native"]["lines_kept"], row
        original = originals(agent, source)
        resumed = resume(out, api, tmp_path / f"resume-{checked}")
        assert resumed.returncode == 0, resumed.output[-2000:]
        assert resumed.refused == [], [r.problem for r in resumed.refused]
        expected, summary = expected_of(out)
        sent = request_blocks(resumed.conversation, reminders=agent == "claude-code")
        assert mismatch(expected, sent) is None, (out.name, mismatch(expected, sent))
        assert any(summary.strip() in text for text in user_texts(resumed.conversation)), out.name
        assert resumed.size < original.size, (out.name, resumed.size, original.size)
        checked += 1
    return checked


@pytest.mark.parametrize("name,context", [(n, c) for n in ("claude-code-viewer", "claude-reliability")
                                          for c in ("defaults", "32k", "small")]
                         + [("vsla", c) for c in ("defaults", "32k", "32k-drop")])
def test_claude_code_resumes_our_compacted_sessions(name, context, api, originals, tmp_path):
    checked = compact_and_resume("claude-code", CLAUDE_CODE[name], CONTEXTS[context], api, originals, tmp_path)
    assert checked >= COMPACTED.get((name, context), 0)


@pytest.mark.parametrize("context", ["defaults", "32k", "32k-drop"])
def test_pi_resumes_our_compacted_session(context, api, originals, tmp_path):
    checked = compact_and_resume("pi", PI["agent-complex-task"], CONTEXTS[context], api, originals, tmp_path)
    assert checked >= COMPACTED.get(("agent-complex-task", context), 0)


def test_pi_sends_what_we_read_from_a_version_1_log(api, tmp_path):
    """A version 1 log (no ids; the compaction names its first kept entry by index): pi migrates it as it
    loads it; what it then sends is the conversation our reader read, block for block."""
    source = shared(PI["agent-complex-task"] / "03-raddit-dashboard-pr.session.jsonl")
    v1 = version_1_of(source, tmp_path / "v1.jsonl")
    (conversation,) = read_conversations(v1, repaired=False)
    resumed = resume_pi(v1, api, tmp_path / "pi")
    assert resumed.returncode == 0 and resumed.refused == [], resumed.output[-2000:]
    _, ours = to_anthropic(conversation.messages, CONVERSATION)
    expected = [(kind, text.removeprefix(SUMMARY_PREFIX).lstrip("\n"))
                for kind, text in request_blocks(ours, reminders=False)]
    assert mismatch(expected, request_blocks(resumed.conversation, reminders=False)) is None


def test_a_session_we_compacted_twice_resumes_in_pi(api, tmp_path):
    """Our own pi output, compacted again at a smaller context: read back as the session it is (our earlier
    compaction found), written with a second compaction entry, and pi resumes from the newest one."""
    folder = shared(PI["agent-complex-task"])
    first = run_cli(tmp_path / "one", f"input={folder}", "model.context_length=32000")
    assert first.returncode in (0, 2), first.stderr
    once = tmp_path / "one" / "transcripts" / "03-raddit-dashboard-pr.session.jsonl"
    second = run_cli(tmp_path / "two", f"input={once}", *CONTEXTS["small"])
    assert second.returncode in (0, 2), second.stderr
    (row,) = [r for r in read_jsonl(tmp_path / "two" / "manifest.jsonl") if r["status"] != "quarantined"]
    assert row["status"] == "compacted" and row["native"]["lines_kept"] == f"1-{len(once.read_bytes().splitlines())}"
    twice = tmp_path / "two" / "transcripts" / once.name
    resumed = resume_pi(twice, api, tmp_path / "pi")
    assert resumed.returncode == 0 and resumed.refused == [], resumed.output[-2000:]
    expected, summary = pi_expected(twice)
    assert mismatch(expected, request_blocks(resumed.conversation, reminders=False)) is None
    assert summary.strip() in user_texts(resumed.conversation)[0]       # the newest summary comes first


def test_the_resume_command_a_reader_tries_says_what_the_agent_loaded(tmp_path):
    """`python -m testkit.resume FILE` (the offline try in docs/formats.md): the agent is told by the file, the exit
    status is 0 for a session it loaded with nothing refused, 1 for one it could not load."""
    import subprocess
    import sys

    from testkit.env import ROOT
    from testkit.resume import agent_of
    folder = shared(CLAUDE_CODE["vsla"])
    result = run_cli(tmp_path / "run", f"input={folder / 'd7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl'}",
                     *CONTEXTS["32k"])
    assert result.returncode == 0, result.stderr
    ours = tmp_path / "run" / "transcripts" / "d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl"
    assert agent_of(ours) == "claude" and agent_of(PI["agent-complex-task"] / "03-raddit-dashboard-pr.session.jsonl") == "pi"
    done = subprocess.run([sys.executable, "-m", "testkit.resume", str(ours)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[CONTEXT COMPACTION]" in done.stdout and "refused" not in done.stdout
    # a log with no message: the agent loads nothing, and the command says so with exit status 1
    session_id = next(json.loads(line)["sessionId"] for line in ours.read_text().splitlines() if '"sessionId"' in line)
    empty = tmp_path / "empty" / ours.name
    empty.parent.mkdir()
    empty.write_text(json.dumps({"type": "summary", "summary": "nothing", "sessionId": session_id}) + "\n")
    nothing = subprocess.run([sys.executable, "-m", "testkit.resume", str(empty)], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert nothing.returncode == 1, nothing.stdout + nothing.stderr
