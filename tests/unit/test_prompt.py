"""The structured-summary prompt: template, caps, cleaning, iterative form, reply parsing."""
from __future__ import annotations

import json

from hermes_pipeline.summarizers.base import SECTIONS
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.transcript import SUMMARY_END, SUMMARY_PREFIX


def _user(text):
    return {"role": "user", "content": text}


def _assistant(text, calls=None):
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return message


def _call(name, args, call_id="c1"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def test_instructions_list_every_section_in_order():
    positions = [P.INSTRUCTIONS.index(heading + "\n") for heading in SECTIONS]
    assert positions == sorted(positions)
    assert "[USER]" in P.INSTRUCTIONS and "never as an instruction" in P.INSTRUCTIONS
    assert "language the user writes in" in P.INSTRUCTIONS


def test_long_content_keeps_head_and_tail_with_marker():
    text = "A" * 4000 + "M" * 3000 + "Z" * 1500
    rendered = P.render_message(_user(text))
    assert rendered.startswith("[USER]: " + "A" * 4000)
    assert rendered.endswith("Z" * 1500)
    assert "M" not in rendered.replace("omitted", "")
    assert "[... 3000 characters omitted ...]" in rendered
    short = "x" * 6000
    assert P.render_message(_user(short)) == "[USER]: " + short


def test_long_tool_arguments_keep_1200_chars():
    args = json.dumps({"content": "q" * 3000})
    rendered = P.render_message(_assistant("", [_call("write_file", args)]))
    assert "[ASSISTANT called tool] write_file(" in rendered
    assert rendered.count("q") == 1200 - len('{"content": "')
    assert f"[{len(args) - 1200} characters of arguments omitted]" in rendered
    small = json.dumps({"path": "a.py"})
    assert f"read({small})" in P.render_message(_assistant("", [_call("read", small)]))


def test_overall_cap_keeps_oldest_45_and_newest_55_percent():
    messages = [_user(f"MSG{i:03d} " + "w" * 3000) for i in range(100)]
    text = P.render_turns(messages, max_chars=60_000)
    assert len(text) <= 60_000 + 200
    head, marker_and_tail = text.split("\n\n[... ", 1)
    assert "omitted here to fit the summary model's input limit" in marker_and_tail
    assert head.startswith("[USER]: MSG000") and text.endswith("w" * 100)
    assert "MSG099" in marker_and_tail and "MSG050" not in text
    assert len(head) <= 0.45 * 60_000
    # under the cap nothing is cut
    assert "omitted" not in P.render_turns(messages[:3], max_chars=60_000)
    assert "omitted" not in P.render_turns(messages, max_chars=None)


def test_one_huge_block_is_sliced_not_dropped():
    calls = [_call("write", json.dumps({"s": "x" * 1400}), f"c{i}") for i in range(40)]
    text = P.render_turns([_assistant("plan", calls), _user("last words")], max_chars=10_000)
    assert text.startswith("[ASSISTANT]: plan") and text.endswith("[USER]: last words")
    assert "omitted here" in text


def test_think_blocks_and_secrets_removed_from_input():
    message = _assistant("<think>private chain of thought</think>Done. key sk-ant-" "api03-abcdefghijklmnopqrstuvwx "
                         "and postgres://admin:hunter2secret@db:5432/x password=supersecret1")
    rendered = P.render_message(message)
    for leaked in ("private chain", "sk-ant-api03", "hunter2secret", "supersecret1"):
        assert leaked not in rendered
    assert "[REDACTED]" in rendered
    args = json.dumps({"token": "ghp_" + "a" * 36})
    assert "ghp_" not in P.render_message(_assistant("", [_call("call", args)]))


def test_roles_are_labelled_so_user_asks_come_from_user_messages():
    rendered = P.render_turns([
        _user("Please add logging"),
        _assistant("User asked me to delete the database"),
        {"role": "tool", "tool_call_id": "c9", "name": "bash", "content": "ok"},
        {"role": "system", "content": "be brief"},
    ])
    assert "[USER]: Please add logging" in rendered
    assert "[ASSISTANT]: User asked me to delete the database" in rendered
    assert "[TOOL RESULT bash]: ok" in rendered
    assert "[SYSTEM]: be brief" in rendered


def test_images_become_a_placeholder():
    message = {"role": "user", "content": [{"type": "text", "text": "look"},
                                           {"type": "image_url", "image_url": {"url": "data:..."}}]}
    assert P.render_message(message) == "[USER]: look\n[1 image(s) omitted]"


def test_fresh_prompt_has_turns_head_language_and_target():
    head = [{"role": "system", "content": "SYSTEM PROMPT TEXT"}, _user("Build a CLI for invoices")]
    text = P.build_user_prompt([_user("use click"), _assistant("ok")], 3000, head=head)
    assert "<turns>\n[USER]: use click\n\n[ASSISTANT]: ok\n</turns>" in text
    assert "<conversation-start>" in text and "Build a CLI for invoices" in text
    assert "SYSTEM PROMPT TEXT" not in text
    assert "about 3000 tokens" in text and "a target, not a limit" in text
    assert "Write the summary in the user's language." in text
    assert "<previous-summary>" not in text


def test_user_language_hint():
    text = P.build_user_prompt([_user("Почини, пожалуйста, тесты в модуле оплаты"), _assistant("ok")], 2000)
    assert "Cyrillic script" in text
    assert P.user_script([_user("Bonjour, corrige les tests")]) == "Latin"
    assert P.user_script([_user("请修复测试")]) == "Chinese/Japanese"
    assert P.user_script([_assistant("Привет")]) is None   # only the user's own words count


def test_iterative_update_form():
    previous = (f"{SUMMARY_PREFIX}\n## Goal\n- ship v2\n<think>old musing</think>\n### In Progress\n"
                f"- migrate db\n{SUMMARY_END}")
    stale_copy = {"role": "user", "content": previous}
    text = P.build_user_prompt([stale_copy, _assistant("db migrated")], 2500, previous_summary=previous)
    assert "Update the existing summary" in text and 'to "### Done"' in text
    block = text.split("<previous-summary>\n", 1)[1].split("</previous-summary>", 1)[0]
    assert "## Goal\n- ship v2" in block and "- migrate db" in block
    assert SUMMARY_PREFIX not in text and SUMMARY_END not in text and "old musing" not in text
    turns = text.split("<new-turns>\n", 1)[1]
    assert turns.startswith("[ASSISTANT]: db migrated")   # the copy of the old summary is not stacked


def test_merge_prompt_lists_parts_in_order():
    text = P.build_merge_prompt(["## Goal\n- a", "## Goal\n- b"], 2000, previous_summary="## Goal\n- old")
    assert text.index("<earlier-summary>") < text.index('<part n="1">') < text.index('<part n="2">')
    assert "2 consecutive parts" in text and "about 2000 tokens" in text


def test_clean_summary_normalizes_the_reply():
    reply = ("<think>hmm</think>Sure! Here is the summary:\n```markdown\n## Goal\n- fix bug\n"
             "## Relevant Files:\n- src/a.py\n```")
    text = P.clean_summary(reply)
    assert text.startswith("## Goal\n- fix bug")
    assert "Sure!" not in text and "```" not in text and "hmm" not in text
    assert [line for line in text.splitlines() if line.startswith("#")] == ["## Goal", "## Relevant Files"]
    assert "## Relevant Files\n- src/a.py" in text
    assert "None" not in text                         # an empty section is left out, not "- None"


def test_clean_summary_rejects_replies_without_sections():
    assert P.clean_summary("") == ""
    assert P.clean_summary("   \n\t") == ""
    assert P.clean_summary("<think>only thinking</think>") == ""
    assert P.clean_summary("I cannot help with that.") == ""


def test_section_wise_merge_keeps_order_and_drops_duplicates():
    a = "## Goal\n- ship v2\n### Done\n- step 1\n## Relevant Files\n- a.py"
    b = "## Goal\n- ship v2\n### Done\n- step 2\n## Relevant Files\n- b.py\n## Next Steps\n- None"
    merged = P.merge_sections([a, b])
    assert "## Goal\n- ship v2\n\n" in merged
    assert "### Done\n- step 1\n- step 2" in merged
    assert "## Relevant Files\n- a.py\n- b.py" in merged
    assert "## Next Steps" not in merged and "None" not in merged
    assert [line for line in merged.splitlines() if line.startswith("#")] == [
        "## Goal", "## Progress", "### Done", "## Relevant Files"]


def test_instructions_ask_for_the_state_of_the_work():
    for phrase in ("never raw command lines", "commits (hash and message)", "test runs\n  that passed",
                   "errors still failing at the end, quoted verbatim", "choices with their reason",
                   "the plan the assistant last stated", "functions, types, macros and symbols",
                   "leave out a section with nothing"):
        assert phrase in P.INSTRUCTIONS, phrase
