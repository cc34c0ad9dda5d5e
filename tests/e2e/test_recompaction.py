"""A conversation compacted again: the earlier summary's trail is the middle's, nothing stacks or grows."""
import json
import re

from hermes_pipeline.analysis.earlier_trail import read_trail
from hermes_pipeline.analysis.probes import extract_probes
from hermes_pipeline.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.embedded.sections import ARTIFACT, USER_WORDS, Line, fit
from hermes_pipeline.summarizers.embedded.summarizer import ExtractiveSummarizer
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import SUMMARY_PREFIX, Conversation, is_summary_message, message_text
from testkit.builders import assistant, calls, engine_for, long_log, result, system, user
from testkit.env import LONG_SESSIONS, REAL, read_jsonl, run_cli, shared
from testkit.sessions import read_conversations

FILES = [f"/repo/src/module_{i}.c" for i in range(6)]


def _first_middle():
    middle = [user("Port the parser to C. Never touch vendor/.")]
    for i, path in enumerate(FILES):
        middle += [calls((f"w{i}", "Write", {"file_path": path, "content": "int x;"})), result(f"w{i}", "ok")]
    middle += [calls(("t", "bash", {"command": "make test"})),
               result("t", long_log("src/module_3.c:12:5: error: unknown type name 'parser_t'")),
               assistant("Next I'll fix the missing parser_t type in src/module_3.c.")]
    return middle


def _summary(middle, head, budget=2000, previous=None):
    return ExtractiveSummarizer().summarize(SummaryRequest("c", middle, budget, 200_000, previous, head=head)).text


def _as_message(text, compacted):
    return user(f"{SUMMARY_PREFIX} {compacted} earlier messages of this conversation were compacted into the "
                f"summary below.\n\n{text}")


def test_our_summary_is_read_back_into_the_files_and_errors_it_names():
    head = [system("s"), user("Port the parser.")]
    text = _summary(_first_middle(), head)
    trail = read_trail(text)
    assert set(trail.files) == set(FILES) and all(a == ["written"] for a in trail.files.values())
    assert [(program, fixed) for program, _, fixed in trail.errors] == [("make", False)]
    assert "unknown type name 'parser_t'" in trail.errors[0][1]
    compact = read_trail("## Relevant Files\n- Edited: /repo/{a.c,b/c.h}\n- Deleted: x.txt, y.txt\n"
                         "- /repo/d.c (read)\n## Artifact Trail\n- Error (fixed later): boom: it broke")
    assert compact.files == {"/repo/a.c": ["edited"], "/repo/b/c.h": ["edited"], "x.txt": ["deleted"],
                             "y.txt": ["deleted"]}               # a file read is no change
    assert compact.errors == [("command", "boom: it broke", True)]


def test_a_second_compaction_probes_and_keeps_what_the_earlier_summary_carried():
    head = [system("s"), user("Port the parser.")]
    first = _as_message(_summary(_first_middle(), head), 17)
    later = [user("Now add a lexer."), calls(("l", "Write", {"file_path": "/repo/src/lexer.c", "content": "x"})),
             result("l", "ok"), assistant("Lexer written.")]
    messages = head + [first] + later
    probes = extract_probes(messages, range(len(head), len(messages)))
    assert set(probes.files_written) == set(FILES) | {"/repo/src/lexer.c"}
    assert [e.fixed for e in probes.errors] == [False]            # still failing: nothing ran make since
    text = _summary([first] + later, head, previous=message_text(first).split("\n\n", 1)[1])
    assert all(path.rsplit("/", 1)[-1] in text for path in FILES)
    assert "unknown type name 'parser_t'" in text
    assert text.count("Latest request:") == 1 and "Latest request: Now add a lexer." in text
    section = lambda name: text.split(name + "\n")[1].split("\n#")[0]
    assert "- (earlier) fix the missing parser_t type in src/module_3.c." in section("## Next Steps")
    assert "(earlier)" not in section("### Done")                # unfinished work is never said to be done
    assert section("### Done").count("Changed ") == 1 and text.count("- Fix what still fails (make): ") == 1


def test_a_small_budget_keeps_room_for_the_newest_artifacts_beside_many_user_turns():
    counter = TokenCounter()
    users = [Line("## Goal", f"- User: continue with step {i} of the migration please", USER_WORDS, i)
             for i in range(30)]
    files = [Line("## Relevant Files", f"- /repo/step_{i}.py (edited)", ARTIFACT, i) for i in range(30)]
    kept = fit(users + files, 300, counter)
    assert any(line.rank == ARTIFACT for line in kept)           # before: the user's words took everything
    assert users[-1] in kept                                      # the latest request goes last
    assert files[-1] in kept and files[0] not in kept             # the newest artifacts first


def test_a_middle_that_is_only_the_earlier_summary_is_left_as_it_is(tmp_path):
    """A real session compacted again with a tail that keeps everything after the summary: nothing new lies
    between head and tail, and a summary of the summary only lost what it said (it once dropped the latest
    request and 5 open errors). At a context it fills by at least half it triggers and still fits; at 3/4 of
    that it does not, and the fit step makes it (engine/context_fit.py)."""
    source = shared(LONG_SESSIONS / "vsla-claude-sessions" / "9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl")
    assert run_cli(tmp_path / "one", f"input={source}", "model.context_length=16000").returncode in (0, 2)
    compacted = tmp_path / "one" / "transcripts" / source.name
    [conversation] = read_conversations(compacted, repaired=False)     # a Claude Code session again
    summary_at = max(i for i, m in enumerate(conversation.messages) if is_summary_message(m))
    kept = len(conversation.messages) - summary_at - 1      # every message after the summary
    # a context where it triggers (at least half of it) and still fits (85% of it, in model tokens x1.2)
    [first] = read_jsonl(tmp_path / "one" / "manifest.jsonl")
    context = int(first["tokens_after"] * 1.2 / 0.85) + 200
    assert first["tokens_after"] >= context * 0.5
    again = run_cli(tmp_path / "two", f"input={compacted}", f"model.context_length={context}",
                    f"compression.protect_last_n={kept}")
    assert again.returncode == 0, again.stderr
    [row] = read_jsonl(tmp_path / "two" / "manifest.jsonl")
    assert row["status"] == "unchanged" and row["trigger"] != "none" and row["summarizer"] is None
    assert row["noop_reason"] == "nothing new to summarize: the middle is the earlier summary alone" and row["fits"]
    assert (tmp_path / "two" / "transcripts" / source.name).read_bytes() == compacted.read_bytes()
    smaller = run_cli(tmp_path / "three", f"input={compacted}", f"model.context_length={int(context * 0.75)}")
    assert smaller.returncode == 0, smaller.stderr
    [row] = read_jsonl(tmp_path / "three" / "manifest.jsonl")
    assert row["status"] == "compacted" and row["fits"] and any(k.startswith("fit_") for k in row["stats"])


class Wordy(Summarizer):
    """A summarizer that writes more than it was asked to: a model may."""
    name = "wordy"

    def __init__(self, name="wordy", model_cfg=None, aux_cfg=None):
        self.name = "wordy"

    def summarize(self, request):
        return SummaryResult(text="## Goal\n- " + "and so on " * 600, summarizer=self.name)


def test_a_compaction_that_would_not_make_the_conversation_smaller_leaves_it_as_it_is():
    messages = [system("s"), user("Port the parser."), assistant("On it."),
                *[m for i in range(8) for m in (user(f"step {i}: " + "go on " * 80), assistant("done " * 100))]]
    engine = engine_for(context_length=4000, protect_last_n=4, **{"summarizer._target_": f"{__name__}.Wordy"})
    compaction = engine.compress(Conversation("c", messages, source="t:1", format="openai"))
    outcome = compaction.outcome
    assert not outcome.compacted and compaction.messages is messages
    assert outcome.noop_reason.startswith("compacting would not make it smaller")
    assert outcome.tokens_after == outcome.tokens_before and outcome.summary.summarizer == "wordy"   # cost kept


def test_recompacting_real_sessions_counts_the_messages_and_files_of_both_compactions(tmp_path):
    source = REAL / "vsla-claude-sessions"
    assert run_cli(tmp_path / "one", f"input={source}", "model.context_length=16000").returncode in (0, 2)
    first = {r["id"]: r for r in read_jsonl(tmp_path / "one" / "manifest.jsonl") if r["status"] == "compacted"}
    assert first
    again = run_cli(tmp_path / "two", f"input={tmp_path / 'one' / 'transcripts'}", "model.context_length=4000",
                    "compression.protect_last_n=4")
    assert again.returncode in (0, 2), again.stderr
    second = {r["id"]: r for r in read_jsonl(tmp_path / "two" / "manifest.jsonl") if r["status"] == "compacted"}
    assert set(first) & set(second)
    # Claude Code sessions written back as themselves, read back as a run reads them
    read_all = lambda folder: {c.id: c for f in folder.rglob("*.jsonl") for c in read_conversations(f, False)}
    out, earlier = read_all(tmp_path / "two" / "transcripts"), read_all(tmp_path / "one" / "transcripts")
    for cid in set(first) & set(second):
        old = [message_text(m) for m in earlier[cid].messages if is_summary_message(m)][-1]    # ours: the last
        new = [message_text(m) for m in out[cid].messages if is_summary_message(m)][-1]
        count = lambda text: int(re.search(r"(\d+) earlier messages", text).group(1))
        assert count(new) > count(old)                                  # both compactions' messages
        carried = read_trail(old).files
        assert second[cid]["quality"]["files_written"]["total"] >= len(carried)   # the earlier trail is probed
        assert new.count("Latest request:") <= 1


def test_the_middles_own_task_list_and_latest_request_win_over_the_earlier_summarys():
    head = [system("s"), user("Port the parser.")]
    earlier = ("## Goal\n- Latest request: Ship the parser.\n\n## Progress\n### In Progress\n- Write the lexer\n\n"
               "### Blocked\n- Still failing (git): Rebasing (1/26)\rerror: untracked files would be overwritten\n\n"
               "## Relevant Files\n- /repo/STATUS.md (read)\n\n## Next Steps\n- Write the parser")
    first = _as_message(earlier, 30)
    todo = {"todos": [{"content": "Write the lexer", "status": "completed"},
                      {"content": "Write the parser", "status": "in_progress"}]}
    later = [calls(("t", "TodoWrite", todo)), result("t", "ok"),
             calls(("e", "Edit", {"file_path": "/repo/STATUS.md", "old_string": "a", "new_string": "b"})),
             result("e", "ok")]
    text = _summary([first] + later, head, previous=earlier)
    assert "(earlier)" not in text                         # the newer task list says where each item stands
    assert "- Write the lexer" in text.split("### Done")[1].split("###")[0]
    assert "Latest request: Ship the parser." in text      # no user turn since: it is still the latest
    assert "STATUS.md (read)" not in text and "/repo/STATUS.md (edited)" in text
    assert "error: untracked files would be overwritten" in text   # a \r inside a quoted line cuts nothing
    probes = extract_probes(head + [first] + later, range(len(head), len(head) + 1 + len(later)))
    assert [e.line for e in probes.errors] == ["Rebasing (1/26) error: untracked files would be overwritten"]


VSLA_D7 = LONG_SESSIONS / "vsla-claude-sessions" / "d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl"
# what the first compaction's summary of d7d349f9 at 32K says, and a second one must still say
EARLIER_REQUESTS = ("Check the status.md and lets get this fully functional please.",
                    "Lets scrap the current tests by putting them in an archive folder",
                    "Lets shoot for one comprehensive structure")
EARLIER_DONE = ("Create a unified tensor structure that supports both CPU and GPU data",
                "Define a clean backend interface with function pointers for operations",
                "Implement CPU backend with optimized operations")


def _compacted_twice(tmp_path, second_context: int, continued: bool):
    """d7d349f9 compacted at 32K, our output (optionally continued by the agent) compacted again."""
    source = shared(VSLA_D7)
    assert run_cli(tmp_path / "one", f"input={source}", "model.context_length=32000").returncode == 0
    again = tmp_path / "again"
    again.mkdir()
    output = again / source.name
    output.write_bytes((tmp_path / "one" / "transcripts" / source.name).read_bytes())
    if continued:      # the agent resumed from our output: new turns chained to its last line
        last = read_jsonl(output)[-1]
        turns = [("user", "Now document the backend interface in docs/BACKENDS.md, please."),
                 ("assistant", "I documented the backend interface in docs/BACKENDS.md: the function table, "
                               "how a backend registers itself, and the single-kernel rule for GPU backends."),
                 ("user", "Good. Next add a CPU backend test for vsla_add in tests/test_backend_cpu.c."),
                 ("assistant", "Added tests/test_backend_cpu.c with a vsla_add test; it builds and passes.")]
        with output.open("a") as handle:
            for n, (who, text) in enumerate(turns):
                uuid = f"00000000-0000-4000-8000-00000000000{n + 1}"
                handle.write(json.dumps({**{k: v for k, v in last.items() if k in ("sessionId", "cwd", "version")},
                                         "parentUuid": last["uuid"], "uuid": uuid, "isSidechain": False,
                                         "type": who, "timestamp": f"2025-07-21T09:0{n}:00.000Z",
                                         "message": {"role": who, "content": [{"type": "text", "text": text}]}}) + "\n")
                last = {**last, "uuid": uuid}
    run = run_cli(tmp_path / "two", f"input={again}", f"model.context_length={second_context}")
    assert run.returncode == 0, run.stderr
    [first_row] = read_jsonl(tmp_path / "one" / "manifest.jsonl")
    [row] = read_jsonl(tmp_path / "two" / "manifest.jsonl")
    [conversation] = read_conversations(tmp_path / "two" / "transcripts" / source.name, repaired=False)
    summary = [message_text(m) for m in conversation.messages if is_summary_message(m)][-1]
    return first_row, row, summary


def _earlier_summary_kept(first_row, row, summary, requests=EARLIER_REQUESTS):
    for request in requests:
        assert request in summary, request
    done = summary.split("### Done\n")[1].split("\n#")[0]
    for item in EARLIER_DONE:
        assert item in done, item
    assert row["status"] == "compacted"
    files = row["quality"]["files_written"]
    assert files["total"] >= first_row["quality"]["files_written"]["total"] and files["kept"] == files["total"]


def test_a_summary_compacted_again_at_a_tighter_budget_keeps_its_goal_done_items_and_files(tmp_path):
    """At 8K the earlier summary is the whole middle and the new one has 400 tokens: it was 8 "Error, fixed
    later" lines and one file (quality 0.625, files 4/16); fixed errors go before the goal (the first and the
    latest request), what was done and the changed files."""
    first_row, row, summary = _compacted_twice(tmp_path, 8000, continued=False)
    _earlier_summary_kept(first_row, row, summary, requests=(EARLIER_REQUESTS[0], EARLIER_REQUESTS[-1]))
    assert "Error, fixed later" not in summary


def test_a_continued_session_compacted_again_keeps_the_earlier_requests_and_done_items(tmp_path):
    """The agent resumed from our output and went on; compacted again at 16K the earlier requests (the
    design direction among them) and the completed task-list items used to go while every fixed error stayed."""
    first_row, row, summary = _compacted_twice(tmp_path, 16000, continued=True)
    _earlier_summary_kept(first_row, row, summary)
    assert "Good. Next add a CPU backend test" not in summary       # the new turns are the verbatim tail
