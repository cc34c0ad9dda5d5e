"""The quality probes and score, on small hand-made conversations, and the Artifact Trail guard."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_pipeline.analysis.probes import extract_probes
from hermes_pipeline.analysis.score import WEIGHTS, compaction_bounds, score
from hermes_pipeline.analysis.tool_output import WantedIdentifiers, identifier_candidates
from hermes_pipeline.run.run_folder import QualityTotals
from hermes_pipeline.summarizers.base import Summarizer
from hermes_pipeline.summarizers.llm.artifact_trail import HEADING, artifact_trail_patch
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import SUMMARY_PREFIX
from testkit.builders import assistant, calls, result, system, user


def probes_of(middle, tail=(), head=None):
    head = head if head is not None else [system(), user("Start."), assistant("ok")]
    messages = head + list(middle) + list(tail)
    return extract_probes(messages, range(len(head), len(head) + len(middle))), messages


def summary(text):
    return {"role": "user", "content": f"{SUMMARY_PREFIX} summary\n\n{text}"}


# -- files --------------------------------------------------------------------------------

def test_every_format_of_write_edit_and_delete_counts():
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: src/new.py\n+x\n" \
            "*** Delete File: src/old.py\n*** End Patch"
    diff = "--- a/lib/util.c\n+++ b/lib/util.c\n@@ -1 +1 @@\n-x\n+y\n"
    middle = [
        calls(("1", "Write", {"file_path": "/repo/a.py", "content": "x"}),
              ("2", "Edit", {"file_path": "/repo/b.py", "old_string": "a", "new_string": "b"}),
              ("3", "MultiEdit", {"file_path": "/repo/c.py", "edits": []}),
              ("4", "NotebookEdit", {"notebook_path": "/repo/n.ipynb", "new_source": "x"})),
        result("1", "File created successfully at: /repo/a.py"), result("2", "The file /repo/b.py has been updated."),
        result("3", "Applied 2 edits"), result("4", "Updated cell"),
        calls(("5", "edit", {"path": "/repo/d.ts", "input": "§/repo/d.ts\n»12ab\n  x\n§/repo/e.ts\n≔3cd\n"}),
              ("6", "write", {"path": "/repo/f.md", "content": "# f"}),
              ("7", "write_file", {"path": "docs/g.md", "content": "g"}),
              ("8", "patch", {"path": "src/h.py", "old_string": "a", "new_string": "b"}),
              ("9", "apply_patch", {"input": patch}), ("10", "apply_diff", {"diff": diff})),
        *[result(str(i), "ok") for i in range(5, 11)],
        calls(("11", "Bash", {"command": "rm -f build/out.o && git rm -q legacy/x.py && mv a/old.txt b/new.txt"}),
              ("12", "bash", {"command": "sed -i 's/a/b/' conf/app.ini && cat > scripts/run.sh <<'EOF'\nrm -rf /\nEOF"})),
        result("11", ""), result("12", ""),
        calls(("13", "shell", {"command": "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: web/app.js\n"
                                          "@@\n-a\n+b\n*** End Patch\nPATCH"})), result("13", "Done!"),
    ]
    probes, _ = probes_of(middle)
    assert probes.files_written == {
        "/repo/a.py": ["written"], "/repo/b.py": ["edited"], "/repo/c.py": ["edited"], "/repo/n.ipynb": ["edited"],
        "/repo/d.ts": ["edited"], "/repo/e.ts": ["edited"], "/repo/f.md": ["written"], "docs/g.md": ["written"],
        "src/h.py": ["edited"], "src/app.py": ["edited"], "src/new.py": ["written"], "src/old.py": ["deleted"],
        "lib/util.c": ["edited"], "build/out.o": ["deleted"], "legacy/x.py": ["deleted"], "a/old.txt": ["moved"],
        "b/new.txt": ["written"], "scripts/run.sh": ["written"], "conf/app.ini": ["edited"], "web/app.js": ["edited"],
    }   # the heredoc body (`rm -rf /`) is file content, not a command


def test_failed_edits_and_reads_are_not_changes():
    middle = [calls(("1", "Edit", {"file_path": "/r/a.py", "old_string": "x", "new_string": "y"}),
                    ("2", "Read", {"file_path": "/r/b.py"}), ("3", "read", {"path": "/r/c.tsx:10-40"}),
                    ("4", "Read", {"file_path": "/r/d.py"})),
              result("1", "<tool_use_error>String to replace not found in file.</tool_use_error>"),
              result("2", "x"), result("3", "y"), result("4", "z"),
              calls(("5", "Edit", {"file_path": "/r/d.py", "old_string": "x", "new_string": "y"})), result("5", "ok")]
    probes, _ = probes_of(middle)
    assert probes.files_written == {"/r/d.py": ["edited"]}
    assert probes.files_read == ["/r/b.py", "/r/c.tsx"]     # line ranges dropped; d.py counts as written only


def test_a_path_is_kept_in_full_by_an_unambiguous_suffix_or_in_a_brace_group_never_by_its_bare_name():
    middle = [calls(("1", "Write", {"file_path": "/home/u/proj/src/core/io.c", "content": ""}),
                    ("2", "Write", {"file_path": "/home/u/proj/include/io.h", "content": ""}),
                    ("3", "Edit", {"file_path": "/home/u/proj/src/main.c", "old_string": "", "new_string": ""}),
                    ("4", "Read", {"file_path": "/home/u/proj/tests/main.c"})),
              result("1", "ok"), result("2", "ok"), result("3", "ok"), result("4", "ok")]
    probes, _ = probes_of(middle)
    kept = lambda text: score(probes, [summary(text)])["files_written"]["kept"]
    assert kept("/home/u/proj/src/core/io.c") == 1
    assert kept("see core/io.c and include/io.h") == 2
    assert kept("io.c, io.h, main.c") == 0                  # bare names say too little
    assert kept("edited src/main.c") == 1
    assert kept("edited main.c") == 0
    assert kept("/home/u/proj/{src/core/io.c,include/io.h,src/main.c}") == 3
    assert kept("/home/u/other/src/main.c") == 0            # another file with the same tail
    ambiguous, _ = probes_of([calls(("1", "Edit", {"file_path": "/a/src/x.c", "old_string": "", "new_string": ""}),
                                    ("2", "Edit", {"file_path": "/b/src/x.c", "old_string": "", "new_string": ""})),
                              result("1", "ok"), result("2", "ok")])
    assert score(ambiguous, [summary("src/x.c")])["files_written"]["kept"] == 0
    assert score(ambiguous, [summary("/a/src/x.c and /b/src/x.c")])["files_written"]["kept"] == 2


def test_a_relative_path_the_file_ends_with_is_the_same_file_not_another_one():
    # read as an absolute path, then moved from the project's folder by a relative one
    # (the vsla session: /home/kenth56/vsla/tests/CMakeLists.txt, `mv tests/CMakeLists.txt tests/archive/`)
    middle = [calls(("1", "Read", {"file_path": "/home/u/vsla/tests/CMakeLists.txt"})), result("1", "cmake"),
              calls(("2", "Bash", {"command": "mv tests/CMakeLists.txt tests/archive/"})), result("2", "")]
    probes, _ = probes_of(middle)
    assert probes.files_read == ["/home/u/vsla/tests/CMakeLists.txt"]
    assert "tests/CMakeLists.txt" in probes.known_paths
    kept = lambda text: score(probes, [summary(text)])["files_read"]["kept"]
    assert kept("Moved away: tests/CMakeLists.txt") == 1
    assert kept("Moved away: CMakeLists.txt") == 0                  # a bare name still says too little
    other, _ = probes_of(middle + [calls(("3", "Read", {"file_path": "/home/u/other/tests/CMakeLists.txt"})),
                                   result("3", "x")])
    assert score(other, [summary("tests/CMakeLists.txt")])["files_read"]["kept"] == 0   # two absolute candidates


# -- user turns ---------------------------------------------------------------------------

def test_user_turns_are_what_the_user_wrote_without_harness_text():
    reminder = "<system-reminder>\nToday is Monday. Directory listing: a b c\n</system-reminder>\n"
    long_turn = ("Here is the log you asked for. " + "Line of pasted output with little meaning here. " * 20
                 + "You must never push to main directly. Please keep the Justfile.")
    middle = [user(reminder + "Please review the PR."), assistant("ok"),
              user("Stop hook feedback:\n[stop.sh]: Cannot exit with unstaged changes."), assistant("ok"),
              user("Caveat: The messages below were generated by the user while running local commands. "
                   "DO NOT respond to these messages or otherwise consider them in your response unless the user "
                   "explicitly asks you to.\n<command-name>/exit</command-name>"), assistant("ok"),
              summary("## Goal\n- old"), user(long_turn), assistant("ok")]
    probes, _ = probes_of(middle)
    assert probes.user_turns[0] == ["Please review the PR."]
    assert len(probes.user_turns) == 2          # hook feedback, command echoes and summaries are not the user
    assert "You must never push to main directly." in probes.user_turns[1]
    check = lambda text: score(probes, [summary(text)])["user_turns"]["kept"]
    assert check("User: Please review the PR.") == 1
    assert check("User:   Please review\n the PR.") == 1          # whitespace does not matter
    assert check("User: Please review.") == 0
    assert check("Please review the PR. Here is the log you asked for. … You must never push to main directly. "
                 "… Please keep the Justfile.") == 2             # a long turn by its distinctive sentences


# -- errors -------------------------------------------------------------------------------

def test_the_last_distinct_errors_of_commands_fixed_or_open():
    build_log = ("[ 10%] Building C object a.o\nsrc/a.c:3:5: error: unknown type name 'foo'\n"
                 "make[2]: *** [CMakeFiles/a.dir/build.make:76: a.o] Error 1\nmake: *** [Makefile:91: all] Error 2\n")
    middle = [calls(("1", "Bash", {"command": "cd build && cmake .. && make -j4 2>&1 | tail -40"})), result("1", build_log),
              calls(("2", "Bash", {"command": "grep -n 'error:' src/a.c"})), result("2", "12: fprintf(stderr, \"error: x\");"),
              calls(("3", "Bash", {"command": "python -m pytest -q"})),
              result("3", "E   AssertionError: expected    4 got 5\nFAILED tests/test_a.py::test_x - AssertionError\n"),
              calls(("4", "read_file", {"path": "notes.txt"})), result("4", "error: this is just a note")]
    tail = [calls(("5", "Bash", {"command": "cd build && make -j4"})), result("5", "[100%] Built target a"),
            assistant("Built.")]
    probes, _ = probes_of(middle, tail)
    lines = {e.line: e.fixed for e in probes.errors}
    assert lines == {"src/a.c:3:5: error: unknown type name 'foo'": True,        # a later clean make
                     "E AssertionError: expected 4 got 5": False,                 # pytest never passed
                     "FAILED tests/test_a.py::test_x - AssertionError": False}
    assert probes.errors[1].text == "E   AssertionError: expected    4 got 5"    # quoted as printed
    result_ = score(probes, [summary("src/a.c:3:5: error: unknown type name 'foo' and E  AssertionError: expected 4 got 5")])
    assert result_["errors"] == {"kept": 2, "total": 3} and result_["errors_open"] == {"kept": 1, "total": 2}


def test_only_the_last_errors_count():
    middle = []
    for i in range(12):
        middle += [calls((f"c{i}", "bash", {"command": f"./run_{i}"})), result(f"c{i}", f"Error: step {i} went wrong")]
    probes, _ = probes_of(middle)
    assert [e.line for e in probes.errors] == [f"Error: step {i} went wrong" for i in range(4, 12)]


# -- identifiers ----------------------------------------------------------------------------

def test_identifiers_from_tool_results_that_later_turns_use():
    details = json.dumps({"user_id": "mia_li_3668", "reservations": ["NO6JO3", "AIXC49"], "payment_methods":
                          {"credit_card_4421486": {"id": "credit_card_4421486"}}, "price": 1859, "zip": "92164"})
    middle = [user("My user id is mia_li_3668."), calls(("1", "get_user_details", {"user_id": "mia_li_3668"})),
              result("1", details), assistant("I see reservations NO6JO3 and AIXC49."),
              calls(("2", "bash", {"command": "git log -1"})), result("2", "commit 3f9ae36d1 Fix it\nSee https://ex.com/pr/7")]
    tail = [calls(("3", "book", {"payment_id": "credit_card_4421486", "total": 1859})), result("3", "ok"),
            user("Open https://ex.com/pr/7 please")]
    probes, _ = probes_of(middle, tail)
    assert probes.identifiers == {"NO6JO3": "reservations", "AIXC49": "reservations",
                                  "credit_card_4421486": "id", "1859": "price",
                                  "https://ex.com/pr/7": "url"}
    # mia_li_3668 came from the user; 3f9ae36d1 and the zip code were never used again
    kept = score(probes, [summary("reservations: NO6JO3, AIXC49; price 1859")])["identifiers"]
    assert kept == {"kept": 3, "total": 5}


# -- the score ----------------------------------------------------------------------------

def _session():
    middle = [user("Keep the public API unchanged."),
              calls(("1", "Write", {"file_path": "/p/src/a.py", "content": "a"}),
                    ("2", "Write", {"file_path": "/p/src/b.py", "content": "b"})),
              result("1", "ok"), result("2", "ok"),
              calls(("3", "Bash", {"command": "pytest"})), result("3", "E   ImportError: cannot import name 'b'")]
    return probes_of(middle)


def test_a_summary_that_drops_a_file_scores_lower():
    probes, _ = _session()
    full = "User: Keep the public API unchanged. Files: /p/src/a.py /p/src/b.py. E ImportError: cannot import name 'b'"
    dropped = full.replace(" /p/src/b.py", "")
    claims = dropped + " (all files kept, nothing omitted)"
    assert score(probes, [summary(full)])["score"] == 1.0
    assert score(probes, [summary(dropped)])["score"] < 1.0
    assert score(probes, [summary(claims)])["score"] == score(probes, [summary(dropped)])["score"]
    weights = sum(WEIGHTS[k] for k in ("files_written", "errors", "errors_open", "user_turns"))
    assert score(probes, [summary(dropped)])["score"] == round(1 - WEIGHTS["files_written"] * 0.5 / weights, 4)


def test_nothing_to_probe_has_no_score_and_bounds_are_read_off_the_output():
    probes, messages = probes_of([assistant("thinking"), user("fine")])
    assert score(probes, messages)["score"] is None        # not a perfect 1.0: there was nothing to keep
    compacted = messages[:3] + [summary("x")] + messages[-1:]
    assert compaction_bounds(messages, compacted) == (3, 4)
    assert compaction_bounds(messages, messages) is None


# -- the old failure modes score low -----------------------------------------------------------------

def _open_task_list():
    todo = {"todos": [{"content": "Port the lexer", "status": "completed"},
                      {"content": "Port the parser to C17", "status": "in_progress"},
                      {"content": "Run the unified test suite", "status": "pending"}]}
    middle = [user("Port the compiler front end."),
              calls(("w", "Write", {"file_path": "/p/src/lexer.c", "content": "int lex;"})), result("w", "ok"),
              calls(("t", "TodoWrite", todo)), result("t", "ok")]
    return probes_of(middle)


def test_a_summary_without_the_open_tasks_of_the_middle_scores_low():
    probes, _ = _open_task_list()
    assert probes.open_tasks == ["Port the parser to C17", "Run the unified test suite"]
    words = "## Goal\n- Port the compiler front end.\n## Relevant Files\n- /p/src/lexer.c (written)\n"
    stateful = words + "### In Progress\n- Port the parser to C17\n## Next Steps\n- Run the unified test suite"
    assert score(probes, [summary(stateful)])["score"] == 1.0
    stateless = score(probes, [summary(words + "### In Progress\n### Next Steps")])   # the old empty sections
    assert stateless["open_tasks"] == {"kept": 0, "total": 2} and stateless["score"] < 0.65


def test_without_a_task_list_the_plan_the_agent_last_stated_is_probed():
    middle = [user("Make the build pass."), calls(("b", "bash", {"command": "make"}),
                                                   text="Now let me fix the include path in src/a.c."),
              result("b", "ok")]
    probes, _ = probes_of(middle)
    assert probes.open_tasks == ["fix the include path in src/a.c."]


def test_an_open_error_called_fixed_is_not_the_state():
    middle = [calls(("m", "bash", {"command": "make"})), result("m", "src/a.c:3:5: error: unknown type name 'foo'")]
    probes, _ = probes_of(middle)
    line = "src/a.c:3:5: error: unknown type name 'foo'"
    wrong = score(probes, [summary(f"## Critical Context\n- Error, fixed later (make): {line}")])
    right = score(probes, [summary(f"### Blocked\n- Still failing (make): {line}")])
    assert wrong["errors"]["kept"] == right["errors"]["kept"] == 1
    assert wrong["errors_open"] == {"kept": 0, "total": 1} and right["errors_open"] == {"kept": 1, "total": 1}
    assert wrong["score"] < right["score"] == 1.0


def test_checking_that_a_deleted_file_is_gone_is_no_error():
    middle = [calls(("r", "bash", {"command": "rm -f chart-smoke.html img/smoke.png; ls chart-smoke.html img/"})),
              result("r", "ls: cannot access 'chart-smoke.html': No such file or directory\nimg:\n"),
              calls(("g", "bash", {"command": "./cleanup.sh && ls img/smoke*"})),          # deleted above: a glob
              result("g", "ls: cannot access 'img/smoke*': No such file or directory"),
              calls(("c", "bash", {"command": "./tools/build.sh"})),
              result("c", "bash: ./tools/build.sh: No such file or directory")]
    probes, _ = probes_of(middle)
    assert [e.line for e in probes.errors] == ["bash: ./tools/build.sh: No such file or directory"]


def test_what_only_looks_like_a_path_is_no_file_probe():
    middle = [calls(("s", "bash", {"command": "sed -i '' 's/const/let/' src/a.js && rm -f out.log 2>/dev/null"}),
                    ("e", "edit", {"path": "textBlocks.map((c:", "old": "a", "new": "b"})),
              result("s", ""), result("e", "ok")]
    probes, _ = probes_of(middle)
    assert set(probes.files_written) == {"src/a.js", "out.log"}


def test_commits_made_in_the_middle_are_probed_by_their_hash():
    middle = [calls(("g", "bash", {"command": "git commit -m 'fix: empty input'"})),
              result("g", "[main 3f2a9c1] fix: empty input\n 1 file changed")]
    probes, _ = probes_of(middle)
    assert probes.commits == ["3f2a9c1"]
    assert score(probes, [summary("- Committed 3f2a9c1 on main: fix: empty input")])["commits"]["kept"] == 1
    assert score(probes, [summary("- Committed the fix.")])["score"] == 0.0


def test_the_run_headline_is_the_mean_over_probed_conversations_with_the_worst_tenth_apart():
    totals = QualityTotals()
    for value in [1.0] * 18 + [0.4, 0.2]:
        totals.add({"score": value, "files_written": {"kept": 1, "total": 1}})
    totals.add({"score": None})                                   # compacted, nothing to probe
    headline = totals.to_dict()
    assert headline["conversations"] == 20 and headline["without_probes"] == 1
    assert headline["score"] == 0.93 and headline["worst_tenth"] == 0.3      # not 0.933 with a free 1.0
    assert headline["files_written"] == {"kept": 20, "total": 20, "share": 1.0}


# -- the Artifact Trail guard ------------------------------------------------------------------

def test_the_trail_adds_what_a_model_summary_missed_within_the_budget():
    probes, _ = _session()
    counter = TokenCounter()
    model_summary = "## Goal\n- Keep the API.\n\n## Relevant Files\n- /p/src/a.py"
    text, missed = artifact_trail_patch(model_summary, probes, 300, counter)
    assert missed == {"files_written": ["/p/src/b.py"], "errors": ["E ImportError: cannot import name 'b'"],
                      "open_tasks": [], "commits": [], "left_out": 0}
    assert text.startswith(model_summary) and HEADING in text
    assert "/p/src/b.py" in text and "E   ImportError: cannot import name 'b'" in text
    assert counter.count_text(text) <= 300
    assert score(probes, [summary(text)])["files_written"]["kept"] == 2
    assert artifact_trail_patch(model_summary, probes, 300, counter) == (text, missed)   # deterministic


def test_the_trail_leaves_a_complete_or_full_summary_alone():
    probes, _ = _session()
    counter = TokenCounter()
    complete = "/p/src/a.py /p/src/b.py E ImportError: cannot import name 'b'"
    assert artifact_trail_patch(complete, probes, 300, counter)[0] == complete
    tight = "## Goal\n- Keep the API."
    text, missed = artifact_trail_patch(tight, probes, counter.count_text(tight) + 5, counter)
    assert text == tight and missed["left_out"] == 3


def test_the_trail_puts_open_errors_first_when_the_budget_is_short():
    middle = []
    for i in range(3):
        middle += [calls((f"w{i}", "Write", {"file_path": f"/p/f{i}.py", "content": ""})), result(f"w{i}", "ok")]
    middle += [calls(("b", "bash", {"command": "make"})), result("b", "main.c:1:1: error: expected ';'")]
    probes, _ = probes_of(middle)
    counter = TokenCounter()
    base = "## Goal\n- x"
    room = counter.count_text(base + f"\n\n{HEADING}\nNot named above, from the compacted turns:") + 20
    text, missed = artifact_trail_patch(base, probes, room, counter)
    assert "main.c:1:1: error: expected ';'" in text and "/p/f" not in text and missed["left_out"] == 3


# -- only identifiers that can matter are looked for -----------------------------------------

_FRAGMENTS = ["NO6JO3", "AIXC49", "3f9ae36d1", "deadbeef42", "mia_li_3668", "credit_card_4421486", "#1234",
              "1234567", "550e8400-e29b-41d4-a716-446655440000", "https://ex.com/pr/7", "a@b.io", "localhost:8080",
              '"price": 1859', '"user_id": ', "[", "]", ", ", ":", ".", " ", "\n", "word", "X", "_", "9", "a1"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=40), st.sets(st.sampled_from(_FRAGMENTS + ["ZZZ99"])))
def test_a_pattern_skipped_for_want_of_used_values_loses_no_value_that_matters(parts, used):
    text = "".join(parts)
    used = set(used) | {v for v, _ in identifier_candidates(text)[:1]}   # at times one that is there
    matters = lambda found: [(v, k) for v, k in found if v in used]
    assert matters(identifier_candidates(text, WantedIdentifiers(used))) == matters(identifier_candidates(text))


class _EveryPattern(WantedIdentifiers):
    def may_yield(self, kind, text):
        return True


def test_probes_of_real_sessions_are_the_same_with_and_without_the_identifier_filter(monkeypatch):
    import hermes_pipeline.analysis.probes as quality
    from testkit.env import REAL
    from testkit.sessions import read_conversations
    conversations = [c for path in sorted(REAL.rglob("*.jsonl")) for c in read_conversations(path)
                     if len(c.messages) >= 12]
    assert len(conversations) >= 10
    filtered = [extract_probes(c.messages, range(3, len(c.messages) - 6)) for c in conversations]
    monkeypatch.setattr(quality, "WantedIdentifiers", _EveryPattern)
    everything = [extract_probes(c.messages, range(3, len(c.messages) - 6)) for c in conversations]
    assert filtered == everything
    assert sum(len(p.identifiers) for p in everything) >= 5   # the comparison covers identifiers at all


_LOG_FRAGMENTS = ["Error", "ValueError: bad", "Exception", "  E   assert 1", "E\tx", "FAIL", "FAILED", "fatal",
                  "fatal: no", "\n", "\n  ", " ", "\t", ":", "x", "error: y", "make: *** [a] Error 2", "def f():"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_LOG_FRAGMENTS), max_size=30))
def test_error_lines_found_line_by_line_are_those_a_scan_of_the_whole_text_finds(parts):
    from hermes_pipeline.analysis.tool_output import _LINE_START_PATTERNS, ERROR_PATTERNS, _error_hits
    text = "".join(parts)
    whole = {m.start() for i in _LINE_START_PATTERNS for m in ERROR_PATTERNS[i].finditer(text)}
    assert whole <= _error_hits(text)
    others = {m.start() for i, p in enumerate(ERROR_PATTERNS) if i not in _LINE_START_PATTERNS for m in p.finditer(text)}
    assert _error_hits(text) == whole | others


_ID_FRAGMENTS = _FRAGMENTS + ["ann@ex.org", "@", "#99", "#1", "user_2024", "_", "127.0.0.1:80", "0.0.0.0:5432",
                              "99999", "999999", "-", "e29b-41d4-", "\n\n", "ABCDE1", "1a2b3c4"]


def _every_match(text):
    """identifier_candidates and use_tokens as a scan of the whole text with every pattern would find them."""
    from hermes_pipeline.analysis.tool_output import _AMOUNT, _ID_PATTERNS, _KEY_BEFORE, _NUMBER
    found = []
    for kind, pattern in _ID_PATTERNS:
        for m in pattern.finditer(text):
            key = _KEY_BEFORE.search(text, max(0, m.start() - 160), m.start())
            found.append((m.group(0).rstrip(".,;:"), key.group(1) if key else kind))
    used = frozenset({value for value, _ in found} | set(_NUMBER.findall(text)))
    return found + [(m.group(2), m.group(1)) for m in _AMOUNT.finditer(text)], used


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_ID_FRAGMENTS), max_size=40))
def test_identifiers_scanned_only_on_lines_holding_a_pattern_literal_are_those_of_a_whole_scan(parts):
    from hermes_pipeline.analysis.tool_output import use_tokens
    text = "".join(parts)
    candidates, used = _every_match(text)
    assert identifier_candidates(text) == candidates
    assert use_tokens.__wrapped__(text) == used


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab-_./=$#&;|<>()*?~ \t\n\r\x0b\x0c") + ["é", "\u00a0"]), max_size=40))
def test_a_command_without_quotes_or_escapes_splits_as_shlex_splits_it(segment):
    import shlex

    from hermes_pipeline.analysis.artifacts import _words
    assert _words(segment) == shlex.split(segment, comments=False)


class Chatty(Summarizer):
    """A summarizer whose bullets are mostly talk, like the old embedded summaries."""
    name = "chatty"

    def __init__(self, name="chatty", model_cfg=None, aux_cfg=None):
        pass

    def check(self):
        pass

    def close(self):
        pass

    def summarize(self, request):
        from hermes_pipeline.summarizers.base import SummaryResult
        return SummaryResult("## Goal\n- Port the parser.\n\n## Progress\n### Done\n- Let me check the build.\n"
                             "- Perfect!\n- Done.\n- Committed 3f2a9c1 on main: fix parser", "chatty")


def test_each_row_counts_how_much_of_its_summary_is_talk():
    from hermes_pipeline.transcript import Conversation
    from testkit.builders import engine_for
    messages = [system(), user("Port the parser."), assistant("On it.")]
    for i in range(8):
        messages += [user(f"step {i}: " + "go on " * 80), assistant("done " * 100)]
    engine = engine_for(context_length=4000, protect_last_n=4, **{"summarizer._target_": f"{__name__}.Chatty"})
    stats = engine.compress(Conversation("c", messages, "t:1")).outcome.stats
    assert (stats["summary_bullets"], stats["summary_chatter_bullets"], stats["summary_chatter_share"]) == (5, 3, 0.6)
    embedded = engine_for(context_length=4000, protect_last_n=4).compress(Conversation("c", messages, "t:1"))
    assert embedded.outcome.stats["summary_chatter_share"] == 0.0


def test_the_results_table_heads_with_the_mean_the_worst_tenth_and_each_kinds_share():
    from hermes_pipeline.reports.console import table_rows
    totals = QualityTotals()
    for value in (1.0, 0.5):
        totals.add({"score": value, "open_tasks": {"kept": 1, "total": 2}, "files_written": {"kept": 3, "total": 3}})
    totals.add({"score": None})
    summary = {"statuses": {"compacted": 3}, "tokens_before": 10, "tokens_after": 5, "token_ratio": 0.5,
               "fallbacks": 0, "wall_seconds": 1.0, "mb_per_second": 1.0, "quality": totals.to_dict()}
    rows = dict(table_rows(summary))
    assert rows["quality score (mean of 2)"] == "0.750" and rows["quality, worst tenth"] == "0.500"
    assert rows["open tasks kept"] == "2/4 (50%)" and rows["files changed kept"] == "6/6 (100%)"
    assert rows["compacted, nothing to probe"] == "1"
