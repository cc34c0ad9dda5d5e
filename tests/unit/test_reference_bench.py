"""The reference benchmark: its term extractor, its chatter rule, and the issue's bar on the shared events."""
from __future__ import annotations

import pytest

from benchmarks.bench_reference import find_events, run_event
from benchmarks.reference_terms import chatter_share, salient_terms, section_empty
from hermes_pipeline.tokens import TokenCounter
from testkit.env import LONG_SESSIONS, shared


def test_salient_terms_are_paths_names_numbers_hashes_and_urls_not_words():
    text = ("Fixed `/home/u/vsla/src/vsla_core.c:120` and cpu/vsla_cpu_memory.c (see CMakeLists.txt); added "
            "vsla_calc_linear_index, attachQuotesBatch and VSLA_ERROR_NULL_POINTER; call load() and "
            "series.priceToCoordinate; \\operatorname macros; C17, v0.43, 900px, 2.5s, 70%, PR #53 at "
            "2c7e464, https://github.com/o/r/pull/53. The build works now.")
    terms = salient_terms(text)
    assert terms["/home/u/vsla/src/vsla_core.c"] == "paths" and terms["cpu/vsla_cpu_memory.c"] == "paths"
    assert terms["CMakeLists.txt"] == "paths"
    for name in ("vsla_calc_linear_index", "attachQuotesBatch", "VSLA_ERROR_NULL_POINTER", "load",
                 "series.priceToCoordinate", "\\operatorname"):
        assert terms[name] == "identifiers", name
    for number in ("C17", "v0.43", "900px", "2.5s", "70%", "#53"):
        assert terms[number] == "numbers", number
    assert terms["2c7e464"] == "hashes" and terms["https://github.com/o/r/pull/53"] == "urls"
    assert not {"build", "works", "Fixed", "vsla_core"} & set(terms)      # words, and a file name's stem
    assert salient_terms(text) == terms                                   # deterministic


def test_chatter_is_talk_not_state():
    summary = ("## Progress\n### Done\n- Let me check the build.\n- Done.\n- `cd build && make | tail` -> ok\n"
               "- Committed 2c7e464 on main: fix parser\n## Key Decisions\n- /** Switch to different session */\n"
               "- Use SQLite instead of Postgres because it needs no server\n## Next Steps\n- I'll fix it")
    assert chatter_share(summary) == (5, 7)
    assert section_empty(summary, "### In Progress") and not section_empty(summary, "### Done")


@pytest.fixture(scope="module")
def outcomes():
    events = [e for path in sorted(shared(LONG_SESSIONS).rglob("*.jsonl")) for e in find_events(path)]
    counter = TokenCounter()
    return [run_event(e, counter) for e in events]


def test_the_shared_events_are_cut_at_the_agents_compaction_with_its_context(outcomes):
    found = {(o.event.path.name[:8], o.event.line): (o.event.kind, o.context) for o in outcomes}
    assert found == {("03-raddi", 574): ("pi", 372_054), ("0a725fb5", 451): ("claude-code", 154_566),
                     ("9034225e", 479): ("claude-code", 154_674)}
    assert all(o.compacted and o.our_tokens <= o.budget for o in outcomes)


def test_the_issues_bar_holds_on_the_shared_events(outcomes):
    terms = sum(len(o.terms) for o in outcomes)
    assert sum(len(o.in_summary) for o in outcomes) / terms >= 0.55
    assert sum(len(o.in_conversation) for o in outcomes) / terms >= 0.85
    talk, bullets = map(sum, zip(*(o.chatter for o in outcomes)))
    assert talk / bullets <= 0.03
    assert sum(o.in_progress_empty and o.next_steps_empty for o in outcomes) == 0
