import json
from collections import Counter

from hermes_pipeline.analysis.conversation import ConversationAnalysis
from hermes_pipeline.analysis.probes import MAX_ERRORS, extract_probes
from hermes_pipeline.config.schema import CompressionConfig
from hermes_pipeline.stages.assemble import STUB_RESULT, sanitize_tool_pairs
from hermes_pipeline.stages.base import Draft
from hermes_pipeline.stages.cache_mark import apply_anthropic_cache_control, caching_policy, strip_cache_control
from hermes_pipeline.stages.plan import (
    choose_summary_role,
    compute_budgets,
    find_head_end,
    find_tail_start,
    make_plan,
)
from hermes_pipeline.stages.prune import PRUNED_TOOL_OUTPUT, PruneStage, shorten_arguments
from hermes_pipeline.stages.score import cleared_errors, rate
from hermes_pipeline.transcript import Conversation, is_summary_message, message_text, pairing_problems
from testkit.builders import assistant, calls, engine_for, long_log, result, system, user
from testkit.env import LONG_SESSIONS, read_jsonl, run_cli, shared
from testkit.sessions import read_conversations
from testkit.validity import problems


def conversation(messages, cid="c1"):
    return Conversation(id=cid, messages=messages, source="test:1")


def test_head_keeps_results_of_calls_made_in_the_head():
    messages = [system(), user("go"), calls(("a", "bash", {"command": "ls"})), result("a", "x"), assistant("done")]
    assert find_head_end(messages, 3) == 4


def test_tail_never_starts_on_a_tool_row():
    messages = [system(), user("go"), assistant("ok"), user("more"),
                calls(("a", "bash", {}), ("b", "bash", {})), result("a", "1"), result("b", "2"), assistant("fine")]
    counts = [10] * len(messages)
    start = find_tail_start(messages, counts, tail_budget=25, protect_last_n=1, head_end=3)
    assert messages[start]["role"] != "tool"
    assert start <= 4


def test_tail_keeps_the_latest_user_message_and_the_reply_after_it():
    messages = [system(), user("first"), assistant("hi"), user("the real ask: port 8431"),
                assistant("working"), calls(("a", "bash", {})), result("a", "x" * 50), assistant("done")]
    counts = [1, 1, 1, 1, 1, 100, 100, 1]
    start = find_tail_start(messages, counts, tail_budget=100, protect_last_n=1, head_end=3)
    assert start == 3


def test_summary_role_alternates_with_its_neighbours():
    after_assistant = [system(), user("a"), assistant("b"), user("c"), assistant("d"), user("e")]
    assert choose_summary_role(after_assistant, 3, 4) == "user"     # after assistant, before assistant
    assert choose_summary_role(after_assistant, 3, 5) is None        # assistant | ... | user: neither fits
    only_system = [system(), user("a"), assistant("b"), user("c")]
    assert choose_summary_role(only_system, 1, 3) is None            # must be user (#52160), but user follows
    assert choose_summary_role(only_system, 1, 2) == "user"


def test_sanitize_drops_orphan_results_and_stubs_missing_ones():
    messages = [user("go"), result("zz", "orphan"), calls(("a", "bash", {}), ("b", "bash", {})), result("a", "1")]
    stats = Counter()
    fixed = sanitize_tool_pairs(messages, stats)
    assert pairing_problems(fixed) == []
    assert fixed[-1] == {"role": "tool", "tool_call_id": "b", "content": STUB_RESULT}
    assert stats == {"orphan_results_dropped": 1, "stub_results_added": 1}


def test_sanitize_pairs_by_position_when_ids_repeat():
    messages = [user("go"), calls(("same", "f", {})), result("same", "1"), assistant("x"), user("y"),
                calls(("same", "f", {})), result("same", "2"), assistant("z")]
    assert sanitize_tool_pairs(messages, Counter()) == messages


def test_truncated_arguments_stay_valid_json():
    arguments = json.dumps({"path": "a.py", "content": "x" * 5000, "nested": {"deep": ["y" * 4000, 3]}})
    short = shorten_arguments(arguments, 1500)
    parsed = json.loads(short)
    assert parsed["path"] == "a.py" and len(parsed["content"]) < 1300 and parsed["nested"]["deep"][1] == 3
    assert shorten_arguments('{"a": 1}', 1500) == '{"a": 1}'


def test_arguments_that_were_never_json_are_shortened_as_text():
    patch = "*** Begin Patch\n*** Add File: notes.md\n" + "+note\n" * 1000 + "*** End Patch\n"
    short = shorten_arguments(patch, 1500)
    assert short.startswith("*** Begin Patch\n*** Add File: notes.md") and short.endswith("...[truncated]")
    assert len(short) < 1300


def _plan(messages, tail_budget_context=4000, protect_last_n=4):
    from hermes_pipeline.tokens import TokenCounter
    counts = TokenCounter().count_messages(messages)
    return make_plan("c", messages, counts, compute_budgets(tail_budget_context, 0.5, 0.2, 0.85),
                     CompressionConfig(protect_last_n=protect_last_n))


def _prune(plan):
    draft = PruneStage().apply(Draft(plan.original, ConversationAnalysis()), plan)
    return draft.messages, draft.counts


def test_prune_clears_long_middle_outputs_but_never_head_or_tail():
    messages = [system(), user("go"), assistant("ok")]
    for i in range(8):
        messages += [calls((f"c{i}", "bash", {"command": f"run {i}"})), result(f"c{i}", "log line\n" * 60),
                     assistant(f"step {i}")]
    messages += [user("thanks"), assistant("bye")]
    copy = json.loads(json.dumps(messages))
    plan = _plan(messages)
    pruned, stats = _prune(plan)
    middle = pruned[plan.head_end:plan.tail_start]
    assert any(m.get("content") == PRUNED_TOOL_OUTPUT for m in middle) and stats["tool_outputs_pruned"] > 0
    assert pruned[:plan.head_end] == tuple(messages[:plan.head_end])
    assert pruned[plan.tail_start:] == tuple(messages[plan.tail_start:])
    assert messages == copy   # the originals are never edited


def test_oversized_tail_demotes_old_outputs_and_keeps_last_three():
    messages = [system(), user("go"), assistant("ok"), user("now")]
    for i in range(6):
        messages += [calls((f"c{i}", "bash", {})), result(f"c{i}", "data " * 400)]
    messages += [assistant("done")]
    plan = _plan(messages, tail_budget_context=4000, protect_last_n=12)
    pruned, stats = _prune(plan)
    tail = pruned[plan.tail_start:]
    assert any(m.get("content") == PRUNED_TOOL_OUTPUT for m in tail) and stats["tail_tool_outputs_demoted"] > 0
    assert pruned[-3:] == tuple(messages[-3:])


def test_a_demoted_tail_output_keeps_its_error_lines():
    """The summary covers the middle only: a tail build's errors cleared with its output would be in neither."""
    messages = [system(), user("go"), assistant("ok"), user("now")]
    link_error = "/usr/bin/ld: tests/test_rank.c:227: undefined reference to `vsla_get_rank'"
    for i in range(6):
        messages += [calls((f"c{i}", "bash", {"command": "make"})),
                     result(f"c{i}", "data " * 400 + (f"\n{link_error}\ncollect2: error: ld returned 1 exit status"
                                                     if i == 1 else ""))]
    messages += [assistant("done")]
    plan = _plan(messages, tail_budget_context=4000, protect_last_n=12)
    pruned, stats = _prune(plan)
    [build] = [m for m in pruned if m.get("tool_call_id") == "c1"]
    assert stats["tail_tool_outputs_demoted"] > 0 and build["content"].startswith(PRUNED_TOOL_OUTPUT)
    assert link_error in build["content"] and "collect2: error: ld returned 1 exit status" in build["content"]
    assert "data data" not in build["content"]


def test_the_score_probes_the_errors_of_cleared_tail_outputs():
    """A demoted output's marker keeps its last error lines; the score checks they are there, so an output
    cleared without them (the bare marker) lowers it."""
    link_errors = [f"/usr/bin/ld: tests/test_rank.c:{i}: undefined reference to `vsla_fn_{i}'" for i in range(20)]
    messages = [system(), user("go"), assistant("ok"), user("now")]
    for i in range(6):
        messages += [calls((f"c{i}", "bash", {"command": "make"})),
                     result(f"c{i}", "data " * 400 + ("\n" + "\n".join(link_errors) if i == 1 else ""))]
    messages += [assistant("done")]
    plan = _plan(messages, tail_budget_context=4000, protect_last_n=12)
    pruned, _ = _prune(plan)
    probes = extract_probes(messages, range(plan.head_end, plan.tail_start), max_errors=None)
    assert rate(probes, pruned)["errors"]["total"] == 0          # the middle has no error: none was probed
    quality = rate(probes, pruned, cleared_errors(plan))
    assert quality["errors"] == {"kept": MAX_ERRORS, "total": MAX_ERRORS} and quality["score"] == 1.0
    bare = [{**m, "content": PRUNED_TOOL_OUTPUT} if m.get("tool_call_id") == "c1" else m for m in pruned]
    quality = rate(probes, bare, cleared_errors(plan))
    assert quality["errors"] == {"kept": 0, "total": MAX_ERRORS} and quality["score"] < 1
    assert link_errors[-1] in quality["missed"]["errors"]


def test_a_tail_far_under_the_context_keeps_the_latest_build_errors(tmp_path):
    """The trial's cut Claude Code session: its tail is over 1.5x the tail budget, yet the output is 17K tokens
    of a 154K context. Demoting its outputs cleared the latest `make` and its linker errors, which the summary
    does not hold either: head, summary and tail under the compaction threshold keep their outputs."""
    source = shared(LONG_SESSIONS / "vsla-claude-sessions" / "9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl")
    cut = tmp_path / "9034225e-cut.jsonl"
    cut.write_text("".join(line + "\n" for line in source.read_text().split("\n")[:478]))    # head -478
    result = run_cli(tmp_path / "run", f"input={cut}", "model.context_length=154674")
    assert result.returncode == 0, result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["stats"].get("tail_tool_outputs_demoted", 0) == 0
    assert row["tokens_after"] <= 0.5 * 154674
    # the conversation the agent resumes (the file also keeps the session's history, which it does not read)
    [compacted] = read_conversations(tmp_path / "run" / "transcripts" / cut.name)
    assert any("undefined reference to `vsla_get_rank" in message_text(m) for m in compacted.messages)


def test_cache_marks_system_and_last_three_and_is_idempotent():
    policy = caching_policy("claude-sonnet-4-5", "anthropic", "auto", "5m")
    messages = [system(), user("a"), assistant("b"), calls(("x", "f", {})), result("x", "r"), user("c")]
    before = json.loads(json.dumps(messages))
    marked = apply_anthropic_cache_control(messages, policy)
    assert messages == before        # the caller's messages are untouched, however deep
    again = apply_anthropic_cache_control(marked, policy)
    assert json.loads(json.dumps(marked)) == json.loads(json.dumps(again)) and messages == before
    markers = [i for i, m in enumerate(marked) if "cache_control" in json.dumps(m)]
    assert markers == [0, 3, 4, 5]
    assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert marked[4]["cache_control"] == {"type": "ephemeral"}            # a tool row, native Anthropic
    assert marked[3]["cache_control"] == {"type": "ephemeral"}            # empty content: on the message
    assert apply_anthropic_cache_control(marked, policy) == marked        # applying twice changes nothing
    assert sum(json.dumps(m).count("cache_control") for m in marked) <= 4
    stripped = strip_cache_control(marked)
    assert all("cache_control" not in json.dumps(m) for m in stripped)


def test_one_hour_ttl_marker_and_openrouter_skips_tool_rows():
    policy = caching_policy("anthropic/claude-sonnet-4.5", "openrouter", "auto", "1h")
    assert policy.enabled and policy.status_line() == "Prompt caching: ENABLED (Claude via OpenRouter, 1h TTL)"
    marked = apply_anthropic_cache_control([system(), user("a"), calls(("x", "f", {})), result("x", "r")], policy)
    assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in marked[3]


def test_short_conversation_is_a_no_op_even_when_huge():
    engine = engine_for(context_length=4000, protect_last_n=20)
    messages = [system(), user("x " * 3000), assistant("y " * 3000)]
    compaction = engine.compress(conversation(messages))
    assert compaction.outcome.trigger != "none" and not compaction.outcome.compacted
    assert compaction.messages == messages and compaction.outcome.noop_reason


def test_mask_only_pipeline_keeps_the_pruned_middle_without_a_summary():
    engine = engine_for(pipeline="mask_only", context_length=4000, protect_last_n=2)
    messages = [system(), user("go"), assistant("ok")]
    for i in range(6):
        messages += [calls((f"c{i}", "bash", {"command": "pytest"})), result(f"c{i}", long_log("E   boom", 80)),
                     assistant(f"step {i}")]
    messages += [user("thanks"), assistant("bye")]
    compaction = engine.compress(conversation(messages))
    assert compaction.outcome.compacted and compaction.outcome.summary is None
    assert not any(is_summary_message(m) for m in compaction.messages)
    assert len(compaction.messages) == len(messages)
    assert compaction.outcome.tokens_after < compaction.outcome.tokens_before / 2
    assert pairing_problems(compaction.messages) == []


def test_compacted_output_is_valid_and_marked():
    engine = engine_for()
    messages = [system(), user("build the parser"), assistant("ok")]
    for i in range(10):
        messages += [user(f"also handle case {i}"), calls((f"c{i}", "read_file", {"path": f"src/p{i}.py"})),
                     result(f"c{i}", "code\n" * 200), assistant(f"handled {i}")]
    compaction = engine.compress(conversation(messages))
    assert compaction.outcome.compacted and compaction.outcome.trigger in ("agent", "hygiene")
    assert problems(messages, compaction.messages) == []
    assert "cache_control" in json.dumps(compaction.messages[-1])


def test_tail_stretches_to_the_latest_user_message_only_within_limits():
    messages = [system(), user("task"), assistant("ok"), user("continue with the plan")]
    for i in range(40):
        messages += [calls((f"c{i}", "bash", {})), result(f"c{i}", "x"), assistant(f"step {i}")]
    counts = [10] * len(messages)
    near = find_tail_start(messages, counts, tail_budget=1300, protect_last_n=2, head_end=3)
    assert near == 3                                   # 1,230 tokens back to the request: within 2.5x
    far = find_tail_start(messages, counts, tail_budget=100, protect_last_n=2, head_end=3)
    assert far > 100 and messages[far]["role"] != "tool"   # too far: the request is summarized instead


def test_a_tail_widened_for_roles_is_still_verbatim():
    # Found by hypothesis: prune once ran before the tail was widened, so a
    # cleared middle output ended up inside the (widened) verbatim tail. (The output
    # is 1,000 characters, not the 4,000 found: at 4,000 the output is over the fit limit,
    # and the fit step clears it in the tail on purpose.)
    messages = [system("system"), user(""), assistant(""), user("word " * 400),
                calls(("a", "bash", {}), ("b", "bash", {}), text="0"),
                result("a", ""), result("b", "0" * 1000), user("")]
    engine = engine_for(context_length=1000, protect_last_n=1)
    compaction = engine.compress(conversation(messages))
    assert compaction.outcome.compacted and compaction.outcome.stats.get("tail_widened_for_roles")
    assert compaction.outcome.fits and not any(k.startswith("fit_") for k in compaction.outcome.stats)
    assert problems(messages, compaction.messages, fitted=False) == []


def test_a_single_prompt_then_only_the_agent_is_compacted_with_the_summary_in_the_first_tail_message():
    """No role fits between a head ending on the prompt and a tail opening with the agent: the summary is
    merged into the first visible tail message, marked as prior context, not given up on."""
    messages = [system(), user("Port this project to Rust; keep the public API.")]
    for i in range(12):
        messages += [calls((f"c{i}", "bash", {"command": f"cargo build --step {i}"})),   # no text: invisible turns
                     result(f"c{i}", "compiling... " * 80)]
    messages.append(assistant("All steps done."))
    engine = engine_for(context_length=4000, protect_last_n=4)
    compaction = engine.compress(conversation(messages))
    assert compaction.outcome.compacted and compaction.outcome.stats["summary_merged_into_tail"] == 1
    assert problems(messages, compaction.messages) == []
    host = next(m for m in compaction.messages if is_summary_message(m))
    text = json.dumps(host)
    assert host["role"] == "assistant" and "[CONTEXT COMPACTION]" in text and "cargo build" in text
    assert text.endswith('All steps done."}') or "All steps done." in text
    assert len(compaction.messages) < len(messages)
