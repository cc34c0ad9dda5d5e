"""Filler the new-user trial found in the embedded summaries, each by a general rule.

System headers and used LaTeX macros are no names of the work; a file entry is a path, once, with its latest
action; a note or task that only makes sense where it was said is left out; a user's sentence about
themselves is no constraint.
"""
from hermes_pipeline.analysis.code_names import names_in
from hermes_pipeline.summarizers.base import SummaryRequest
from hermes_pipeline.summarizers.embedded.summarizer import ExtractiveSummarizer
from testkit.builders import assistant, calls, result, user
from tests.unit.test_extractive import section

C_FILE = '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include "vsla/vsla_core.h"\n' \
         '#include <vsla/vsla_tensor.h>\n\nint vsla_fill(vsla_tensor_t *t) { return VSLA_OK; }\n'


def _summary(middle, previous=None, head=None):
    request = SummaryRequest("c", middle, 4000, 200_000, previous, head=head or [user("Port the library to C.")])
    return ExtractiveSummarizer().summarize(request).text


def test_system_headers_and_latex_macros_a_document_uses_are_no_names_of_the_change():
    names = names_in(C_FILE)
    assert "vsla_fill" in names and "vsla/vsla_core.h" in names and "vsla/vsla_tensor.h" in names
    assert not {"stdio.h", "stdlib.h", "string.h"} & set(names)
    latex = names_in("\\newcommand{\\vsla}{V}\n\\section{Intro} \\textbf{Tensors} use \\vsla and \\mathrm{d}x.")
    assert latex == ["\\vsla"]                                   # defined here; \section, \textbf only used


def test_a_note_that_only_makes_sense_where_it_was_said_is_left_out():
    middle = [user("Make the build pass."),
              calls(("a", "Edit", {"file_path": "/r/a.c", "old_string": "x", "new_string": "y"}),
                    text="Let me be more specific:"),
              result("a", "ok"),
              calls(("b", "Edit", {"file_path": "/r/b.c", "old_string": "x", "new_string": "y"}),
                    text="I'll fix these one by one."),
              result("b", "ok"),
              calls(("c", "Edit", {"file_path": "/r/c.c", "old_string": "x", "new_string": "y"}),
                    text="Now I'll add the vsla_fill declaration to the CPU backend header."),
              result("c", "ok"),
              assistant("The tests still fail on CUDA. I'll temporarily exclude it.")]
    files = section(_summary(middle), "## Relevant Files")
    assert "- /r/a.c (edited)\n" in files and "- /r/b.c (edited)\n" in files          # no note beside them
    assert "- /r/c.c (edited): add the vsla_fill declaration to the CPU backend header." in files
    text = _summary(middle)
    assert "exclude it" not in text and "be more specific" not in text and "one by one" not in text


def test_pi_file_lists_give_each_path_once_without_line_ranges_or_markers():
    earlier = ("## Goal\nFix the dashboard.\n\n## Progress\n### Done\n- [x] Read the charts\n\n"
               "<read-files>\n/app/src/typings.d.ts:3392-3430\\n/app/src/Dashboard.tsx:189-210\\n"
               "… (34 more files omitted)\n</read-files>\n<modified-files>\n/app/src/Chart.tsx\\n/app/src/api.ts\n"
               "</modified-files>")
    middle = [user(f"The conversation history before this point was compacted into the following summary:\n"
                   f"<summary>\n{earlier}\n</summary>"),
              calls(("e", "edit", {"path": "/app/src/Chart.tsx", "oldText": "a", "newText": "b"})), result("e", "ok")]
    files = section(_summary(middle, previous=earlier), "## Relevant Files")
    lines = files.strip().splitlines()
    assert "- /app/src/typings.d.ts (read earlier)" in lines and "- /app/src/Dashboard.tsx (read earlier)" in lines
    assert "- /app/src/api.ts (changed earlier)" in lines
    assert [line for line in lines if "Chart.tsx" in line and "names" not in line] == ["- /app/src/Chart.tsx (edited)"]
    assert "omitted" not in files and ":3392" not in files and "\\n" not in files


def test_a_users_sentence_about_themselves_is_no_constraint():
    middle = [user("I don't remember the reservation ID, sorry. Never book a basic economy fare."),
              assistant("Understood.")]
    rules = section(_summary(middle), "## Constraints & Preferences")
    assert "Never book a basic economy fare." in rules and "reservation ID" not in rules


def test_what_the_agent_exclaims_to_the_user_is_not_carried_as_a_finding():
    middle = [user("Fix the sync."),
              calls(("e", "Edit", {"file_path": "/r/src/sync.ts", "old_string": "x", "new_string": "y"})),
              result("e", "ok"),
              assistant("The reconcile() in src/sync.ts now merges both cursors before writing. This eliminates the "
                        "'weird back and forth' issues you identified in sync.ts! 🎉"),
              user("Thanks. Now the docs.")]
    text = _summary(middle)
    assert "reconcile() in src/sync.ts now merges both cursors" in text
    assert "you identified" not in text and "🎉" not in text
