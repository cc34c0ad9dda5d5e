"""What real inputs put in the user's turn that is not the user's words, and what an earlier summary says
that is no longer so: the summary is not fooled by them (issue 31's shapes, made here as the tools make
them: a spec-driven workflow's command template, a Claude Code command and skill, a continued log)."""
import re

from hermes_pipeline.analysis.user_text import user_text
from hermes_pipeline.summarizers.base import SummaryRequest
from hermes_pipeline.summarizers.embedded.summarizer import ExtractiveSummarizer
from testkit.builders import assistant, calls, result, system, user

# A prompt document as a spec-driven workflow's slash command expands it in the user turn (front matter,
# the user's arguments in a fenced block under "User Input", then a long procedure for the agent).
STEPS = "\n".join(f"{n}. You **MUST** check the spec's section {n} and never skip a gate; the header separator "
                  f"must have at least 3 dashes (rule {n})." for n in range(1, 80))
TEMPLATE = ("---\ndescription: Create or update the feature specification from a description.\n---\n\n"
            "## User Input\n\n```text\nUC-26 with acceptance tests for the export screen; create a new branch first\n"
            "```\n\nYou **MUST** consider the user input before proceeding (if not empty).\n\n## Outline\n\n"
            f"{STEPS}\n\n## Quick Guidelines\n\n- Focus on WHAT users need and WHY.\n- Avoid HOW to implement.\n")
COMMAND = ("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
           "<command-args>the retry logic in worker.py</command-args>\n"
           "Review the code the user names. " + " ".join(f"You must always check point {n} carefully." for n in range(60)))
SKILL = ("Base directory for this skill: /home/dev/.claude/skills/pdf-tables\n\n# PDF tables\n\n"
         + "\n".join(f"- Always extract table {n} with the column order preserved." for n in range(60)))


def summary_of(*turns, budget=3000):
    middle = []
    for n, text in enumerate(turns):
        middle += [user(text), calls((f"c{n}", "bash", {"command": f"ls src/part{n}"})),
                   result(f"c{n}", f"src/part{n}/a.py\nsrc/part{n}/b.py"), assistant(f"Listed part {n}.")]
    request = SummaryRequest("c", middle, budget, 200_000, head=[system(), user("Set up the export feature.")])
    return ExtractiveSummarizer().summarize(request).text


def section(text: str, heading: str) -> str:
    found = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^#|\Z)", text, re.M | re.S)
    return found.group(1) if found else ""


def test_a_commands_prompt_template_is_its_arguments_and_one_line():
    assert user_text(user(TEMPLATE)) == ("ran a prompt template (Create or update the feature specification from a "
                                         "description.): UC-26 with acceptance tests for the export screen; "
                                         "create a new branch first")
    text = summary_of(TEMPLATE)
    goal, rules = section(text, "## Goal"), section(text, "## Constraints & Preferences")
    assert "UC-26 with acceptance tests" in goal and len(goal) < 400
    assert "MUST" not in text and "dashes" not in rules       # no line of the template is the user's


def test_a_claude_code_command_and_a_skill_are_what_ran_and_with_what():
    assert user_text(user(COMMAND)) == "ran /review: the retry logic in worker.py"
    assert user_text(user(SKILL)) == "used the skill pdf-tables"
    text = summary_of(COMMAND, SKILL)
    assert "ran /review: the retry logic in worker.py" in section(text, "## Goal")
    assert "always check point" not in text and "Always extract table" not in text


def test_a_built_in_command_alone_is_no_request_and_the_users_own_long_text_stays_theirs():
    assert user_text(user("<command-name>/exit</command-name>\n<command-message>exit</command-message>\n"
                          "<command-args></command-args>")) == ""
    own = "## What I need\n\n" + "\n".join(f"- the export must keep column {n}" for n in range(40))
    assert user_text(user(own)) == own       # headings of one's own are no template


# An earlier Claude Code summary at the start of a log that goes on after it (the shape Claude Code writes).
EARLIER = """This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:
Analysis:
The user asked for the export feature; it was built.

Summary:
1. Primary Request and Intent:
   The user asked to add CSV export to the report screen.
2. Key Technical Concepts:
   - streaming writer
3. Files and Code Sections:
   - src/export/csv_writer.py
     - **Code change**:
     ```python
     def write_rows(rows): ...
     ```
4. Errors and fixes:
   - None
5. Problem Solving:
   Export works for small reports.
6. All user messages:
   - "add CSV export to the report screen"
7. Pending Tasks:
   - None
8. Current Work:
   All requested tasks have been completed.
9. Optional Next Step:
   No next step needed.
"""


def test_an_earlier_summarys_word_on_the_state_of_the_work_gives_way_to_the_middle_after_it():
    todo = {"todos": [{"content": "Stream rows for large reports", "status": "in_progress"},
                      {"content": "Add a progress bar to the export", "status": "pending"}]}
    middle = [user("Large reports time out. Stream the rows instead of building the file in memory."),
              calls(("t1", "TodoWrite", todo)), result("t1", "Todos updated"),
              calls(("e1", "Edit", {"file_path": "src/export/csv_writer.py", "old_string": "rows", "new_string": "it"})),
              result("e1", "The file src/export/csv_writer.py has been updated."), assistant("Streaming now.")]
    request = SummaryRequest("c", middle, 3000, 200_000, previous_summary=EARLIER, head=[system()])
    text = ExtractiveSummarizer().summarize(request).text
    assert "All requested tasks have been completed" not in text and "No next step needed" not in text
    assert "Code change" not in text
    assert "Stream rows for large reports" in section(text, "### In Progress")
    assert "add CSV export to the report screen" in text          # its facts carry over


def test_a_secret_scanners_rule_naming_the_key_armor_is_no_key_and_a_real_key_still_is():
    from hermes_pipeline.analysis.redact import redact_summary, secrets_in
    rules = ("[[rules]]\nid = 'private-key'\nregex = '''-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY-----'''\n"
             "keywords = [\"-----BEGIN RSA PRIVATE KEY-----'''\", \"PRIVATE KEY\"]\n\nThe security evaluation "
             "of this Mac covers performance and reliability.")
    assert secrets_in([rules]) == set()
    summary = "- Request: perform a security evaluation of this Mac (performance, reliability)"
    assert redact_summary(summary, [{"role": "tool", "content": rules}]) == summary
    key = ("-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEowIBAAKCAQEAx7" * 4 + "\n" + "Zm9vYmFy" * 8
           + "\n-----END RSA PRIVATE KEY-----")
    found = secrets_in([f"the deploy key:\n{key}\nthanks"])
    assert len(found) == 1 and "MIIEowIBAAKCAQEAx7" in next(iter(found)) and "thanks" not in next(iter(found))


def test_files_under_a_variable_and_a_file_edited_again_and_again_are_named_after_compaction():
    from hermes_pipeline.analysis.score import conversation_text
    from hermes_pipeline.transcript import Conversation
    from testkit.builders import engine_for
    scripts = [f"${{ANALYSIS_WORKDIR}}/work/step_{n:02d}_fit.py" for n in range(11)]
    messages = [system(), user("Fit the survival models and plot the curves.")]
    for n, path in enumerate(scripts):
        messages += [calls((f"w{n}", "Bash", {"command": f"cat > \"{path}\" <<'EOF'\nimport pandas\n"
                                                         f"print('model {n}')\n" + "x = 1\n" * 40 + "EOF"})),
                     result(f"w{n}", ""), calls((f"r{n}", "Bash", {"command": f"python \"{path}\""})),
                     result(f"r{n}", f"model {n} fitted: AIC {1000 + n}\n" + "iteration ok\n" * 60),
                     assistant(f"Step {n} fitted.")]
    for k in range(3):
        messages += [calls((f"e{k}", "Edit", {"file_path": "scripts/convert_to_markdown.py", "old_string": f"v{k}",
                                             "new_string": f"v{k + 1}"})),
                     result(f"e{k}", "The file scripts/convert_to_markdown.py has been updated."),
                     assistant(f"Converter revised ({k + 1}).")]
    messages += [user("Now write the report."), assistant("Writing the report.")] * 12
    compaction = engine_for(context_length=8000, protect_last_n=6).compress(Conversation("c", messages, "t:1"))
    assert compaction.outcome.compacted
    text = conversation_text(compaction.messages)
    assert [p for p in scripts + ["scripts/convert_to_markdown.py"] if p not in text] == []
