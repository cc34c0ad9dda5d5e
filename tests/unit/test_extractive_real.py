"""The embedded summarizer on the real long sessions and the corpus, at model.context_length=16000.

What a summary must say is checked on real summaries (a file, an error, a constraint,
an identifier), and the retention of every probe kind is checked per file against the
thresholds of the artifact-trail issue. Skipped when the shared data is not there.
"""
from __future__ import annotations

import json
import re

import pytest

from hermes_pipeline.analysis.artifacts import expand_braces
from hermes_pipeline.summarizers.base import SECTIONS
from testkit.env import CORPUS, LONG_SESSIONS, REAL, shared
from testkit.sessions import make_engine, measure, read_conversations
from testkit.validity import problems

# the shared long sessions and corpus when they are here (CI), else the real files kept in the repository
SHARED = sorted(LONG_SESSIONS.rglob("*.jsonl")) + sorted(CORPUS.rglob("*.jsonl"))
FILES = SHARED or sorted(REAL.rglob("*.jsonl"))
THRESHOLDS = {"files_written": 0.95, "user_turns": 0.98, "errors": 0.80, "identifiers": 0.80}


def section(text: str, heading: str) -> str:
    """The body of one section ('' when the summary leaves it out)."""
    if heading + "\n" not in text:
        return ""
    start = text.index(heading + "\n") + len(heading) + 1
    later = [text.find("\n" + h + "\n", start) for h in SECTIONS if text.find("\n" + h + "\n", start) >= 0]
    return text[start:min(later)] if later else text[start:]


@pytest.fixture(scope="module")
def results():
    """path -> [(conversation, quality result)] for every compacted conversation, at context 16000."""
    engine = make_engine(16000)
    out = {}
    for path in FILES:
        out[path] = [(c, r) for c in read_conversations(path) for r in [measure(engine, c)] if r is not None]
    return out


def one(results, name: str, conversation_id: str | None = None) -> dict:
    found = next((r for p in results if p.name.startswith(name) for c, r in results[p]
                  if conversation_id in (None, c.id)), None)
    if found is None:
        shared(LONG_SESSIONS)             # only the shared sessions have it: skip, saying why
        pytest.fail(f"{name} {conversation_id or ''} was not compacted")
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:28])
def test_retention_budget_and_validity_per_file(results, path):
    rows = results[path]
    totals = {kind: [0, 0] for kind in THRESHOLDS}
    for conversation, result in rows:
        assert problems(conversation.messages, result["compaction"].messages) == [], conversation.id
        assert 0 < result["summary_tokens"] <= result["budget"], conversation.id
        for kind in THRESHOLDS:
            totals[kind][0] += result[kind]["kept"]
            totals[kind][1] += result[kind]["total"]
    for kind, (kept, total) in totals.items():
        assert not total or kept / total >= THRESHOLDS[kind], (kind, kept, total)


def test_most_shared_sessions_are_compacted_at_16000(results):
    shared(LONG_SESSIONS)
    long_ones = [p for p in FILES if p.is_relative_to(LONG_SESSIONS)]
    assert all(results[p] for p in long_ones)
    assert sum(len(rows) for rows in results.values()) >= 12   # so the thresholds are not met vacuously


def test_a_c_library_session_keeps_its_files_errors_and_the_users_requirement(results):
    text = one(results, "d7d349f9")["summary"]
    files = section(text, "## Relevant Files")
    named = set(expand_braces(files)) | set(re.findall(r"- (\S+) \(", files))
    assert {"/home/kenth56/vsla/src/backends/vsla_backend_cpu_new.c", "/home/kenth56/vsla/CMakeLists.txt",
            "/home/kenth56/vsla/include/vsla/vsla_unified.h"} <= named
    assert "tests/*.c" in files                        # moved into tests/archive by `mv tests/*.c tests/archive/`
    assert "error: redefinition of ‘vsla_scale’" in section(text, "## Critical Context")   # fixed by a later build
    assert "We need the GPU operations to be a single kernel when they run" in section(text, "## Goal")
    assert "(none)" not in text and section(text, "### Done") and section(text, "### In Progress")


def test_open_test_failures_are_blocked_and_the_agents_earlier_summary_is_updated(results):
    text = one(results, "9034225e")["summary"]
    assert "❌ 5 TEST(S) FAILED" in section(text, "### Blocked")
    assert "❌ 5 TEST(S) FAILED" in section(text, "## Next Steps")                  # what to do about it
    goal = section(text, "## Goal")
    assert "This session is being continued" not in text and "Analysis:" not in text
    assert "- Analyze Gemini's backend refactoring work using git diff" in goal     # Claude Code's own goal, carried
    assert "/home/kenth56/vsla/STATUS.md" in goal       # the user's latest request, verbatim
    compaction = one(results, "9034225e")["compaction"]
    assert sum("[CONTEXT COMPACTION]" in json.dumps(m) for m in compaction.messages) == 1   # updated, not stacked


def test_a_pi_session_quotes_the_user_not_the_harness_and_updates_pis_summary(results):
    text = one(results, "03-raddit")["summary"]
    assert "[CONTEXT COMPACTION]" not in text and "<system-reminder>" not in text and "workspace-tree" not in text
    assert "- Asked: 머지할까? — user: 리뷰루프" in section(text, "## Key Decisions")      # a short answer
    assert "- Respond in Korean, concise" in section(text, "## Constraints & Preferences")   # pi's, carried
    assert "https://github.com/qkrehgus714/raddit/pull/53" in section(text, "### Done")
    assert "Dashboard.tsx" in section(text, "## Relevant Files")


def test_a_tau_bench_summary_keeps_reservation_ids_and_what_comes_next(results):
    text = one(results, "gpt-4o-airline", "airline-2-1")["summary"]
    assert "reservations: JG7FMM, LQ940Q, 2FBBAH, X7BYG1, EQ1G6C, BOH180" in section(text, "## Critical Context")
    assert "price: 1859, 1679" in section(text, "## Critical Context")          # the business fares of JG7FMM
    assert "calculate the total refund amount" in section(text, "### In Progress")   # under way at the cut
    assert "without changing the flights or passengers" in section(text, "## Constraints & Preferences")


def test_done_and_next_steps_agree(results):
    text = one(results, "coverage-test-fix")["summary"]
    assert "Changed 2 file(s)" in section(text, "### Done")
    assert "I'll add" not in section(text, "## Next Steps") + section(text, "### In Progress")
    files = section(text, "## Relevant Files")
    assert "/tmp/tmpw6sk2trg/src/math_utils.py (edited)" in files
    assert "/tmp/tmpw6sk2trg/tests/test_math_utils.py (edited)" in files


def test_a_tiny_budget_still_names_the_files_and_never_doubles_bullets():
    """The Rust port at context 4000 with a 200-token summary (compression.summary_ceiling=200): the written
    files come before everything else."""
    engine = make_engine(4000, "compression.protect_last_n=4", "compression.summary_ceiling=200")
    (path,) = [p for p in FILES if p.name.startswith("python-to-rust-port")]
    (conversation,) = read_conversations(path)
    result = measure(engine, conversation)
    text = result["summary"]
    assert result["summary_tokens"] <= result["budget"] == 200
    assert "- (none)" not in section(text, "## Relevant Files") and "src/math_utils.py" in text
    assert not re.search(r"^- - ", text, re.M)
    assert result["files_written"]["kept"] / result["files_written"]["total"] >= 0.95


def test_same_input_same_bytes(results):
    engine = make_engine(16000)
    (path,) = [p for p in FILES if p.name.startswith("coverage-test-fix")]
    outputs = [json.dumps(measure(engine, c)["compaction"].messages) for c in read_conversations(path) * 2]
    assert outputs[0] == outputs[1]
