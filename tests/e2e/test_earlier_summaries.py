"""An earlier summary found in the input is the previous summary the new one updates, never a second copy.

Every form: Claude Code's `isCompactSummary` line and pi's `compaction` entry (the shared long
sessions, whose logs continue after the agent's own compaction), the Hermes agent's
"[CONTEXT COMPACTION — REFERENCE ONLY]" message in an OpenAI list, and the trajectory
compressor's "[CONTEXT SUMMARY]:" turn in a ShareGPT trajectory (through the real CLI).
"""
from __future__ import annotations

import json

from hermes_pipeline.stages.plan import previous_summary_text
from hermes_pipeline.transcript import Conversation, is_summary_message, message_text
from testkit.builders import assistant, calls, engine_for, result, system, user
from testkit.env import LONG_SESSIONS, read_jsonl, run_cli, shared
from testkit.sessions import make_engine, read_conversations

HERMES_PREFIX = ("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. "
                 "This is a handoff from a previous context window — treat it as background reference. "
                 "The current session state (files, config, etc.) may reflect work described here — avoid "
                 "repeating it:")
HERMES_BODY = ("## Goal\nMigrate the billing jobs to the new scheduler.\n\n## Completed Actions\n"
               "1. Ported `billing/jobs.py` to the `TaskQueue` API\n\n## Active State\nRetry policy half done\n\n"
               "## Remaining Work\nWire `retry_backoff` into `billing/worker.py`\n\n## Critical Context\n"
               "Queue name is billing-v2")


def _work(n: int, text: str = "Editing") -> list[dict]:
    out = []
    for i in range(n):
        out += [calls((f"e{i}", "edit_file", {"path": f"billing/part_{i}.py", "old": "a", "new": "b " * 300}),
                      text=f"{text} part_{i}."), result(f"e{i}", "ok")]
    return out


def _summaries(messages: list[dict]) -> list[str]:
    return [message_text(m) for m in messages if is_summary_message(m)]


def test_the_hermes_agents_summary_in_an_openai_list_is_updated():
    messages = [system("You are Hermes."), user("Migrate the billing jobs."), assistant("Starting."),
                user(f"{HERMES_PREFIX}\n{HERMES_BODY}"), assistant("Continuing the migration."), *_work(8),
                user("Now add the retry backoff."), assistant("Adding it.")]
    assert previous_summary_text(messages[3]).startswith("## Goal\nMigrate the billing jobs")
    compaction = engine_for(context_length=4000, protect_last_n=2).compress(Conversation("h", messages, "t:1"))
    assert compaction.outcome.compacted
    [text] = _summaries(compaction.messages)
    assert "REFERENCE ONLY" not in text and text.startswith("[CONTEXT COMPACTION]")
    summary = compaction.outcome.summary.text
    assert "- Migrate the billing jobs to the new scheduler." in summary          # its goal, carried
    assert "- (earlier) Wire `retry_backoff` into `billing/worker.py`" in summary   # its plan, still open
    # what it says was done outranks its other context in this small budget (its queue name went before)
    assert "- Ported `billing/jobs.py` to the `TaskQueue` API" in summary.split("### Done")[1].split("###")[0]
    assert "billing/part_0.py (edited)" in summary


def test_a_trajectory_summary_in_a_sharegpt_record_is_updated_through_the_cli(tmp_path):
    turns = [{"from": "system", "value": "You are a function calling AI model."},
             {"from": "human", "value": "Clean up the logs folder."},
             {"from": "gpt", "value": "On it."},
             {"from": "human", "value": "[CONTEXT SUMMARY]: The assistant listed logs/ and deleted logs/old_1.log "
                                        "after the user asked to keep only logs/app.log."}]
    for i in range(10):
        turns += [{"from": "gpt", "value": f"Removing old file {i}.\n<tool_call>\n" + json.dumps(
                      {"name": "terminal", "arguments": {"command": f"rm logs/old_{i + 2}.log"}}) + "\n</tool_call>"},
                  {"from": "tool", "value": "<tool_response>\n" + json.dumps(
                      {"name": "terminal", "content": "removed " + "x " * 200}) + "\n</tool_response>"}]
    turns += [{"from": "human", "value": "Thanks, now compress logs/app.log."}, {"from": "gpt", "value": "Done."}]
    source = tmp_path / "trajectories.jsonl"
    source.write_text(json.dumps({"id": "traj", "conversations": turns}) + "\n")
    run = run_cli(tmp_path / "run", f"input={source}", "model.context_length=4000", "compression.protect_last_n=2")
    assert run.returncode == 0, run.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["status"] == "compacted"
    [out] = read_jsonl(tmp_path / "run" / "transcripts" / source.name)
    values = [turn["value"] for turn in out["conversations"]]
    assert sum("[CONTEXT" in value for value in values) == 1 and not any("[CONTEXT SUMMARY]" in v for v in values)
    summary = next(v for v in values if "[CONTEXT COMPACTION]" in v)
    assert "deleted logs/old_1.log after the user asked to keep only logs/app.log" in summary   # carried
    assert "logs/old_2.log (deleted)" in summary                                                 # the new work


def test_the_shared_claude_code_and_pi_logs_fold_the_agents_own_summary_into_ours():
    """Both logs go on after the agent compacted; compacting them again keeps one summary: ours, first,
    carrying the agent's goal and rules, with the new work after it."""
    engine = make_engine(16000)
    cases = {"vsla-claude-sessions/9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl":
             ("- Analyze Gemini's backend refactoring work using git diff", "This session is being continued"),
             "agent-complex-task/03-raddit-dashboard-pr.session.jsonl":
             ("- Respond in Korean, concise", "Turn Context (split turn)")}
    for name, (carried, wrapper) in cases.items():
        (conversation,) = read_conversations(shared(LONG_SESSIONS / name))
        assert is_summary_message(conversation.messages[0])              # the log starts after its compaction
        compaction = engine.compress(conversation)
        assert compaction.outcome.compacted, name
        texts = [json.dumps(m, ensure_ascii=False) for m in compaction.messages]
        assert len(_summaries(compaction.messages)) == 1 and is_summary_message(compaction.messages[0]), name
        assert not any(wrapper in t for t in texts), name                  # the agent's text is not kept verbatim
        assert carried in compaction.outcome.summary.text, name
