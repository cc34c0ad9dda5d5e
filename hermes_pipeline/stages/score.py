"""Last: a deterministic quality score of the compaction, from its input (hermes_pipeline.analysis).

`quality.score` is the share of the facts of the removed messages (what the user and the agent said and
did there) that the compacted conversation still holds (analysis/recall.py): the built-in score that
agrees with the judged exam. Beside it, the probes (files changed and read, the user's turns, the last
errors, identifiers used again later, the open tasks and commits), each kind kept/total, and their own
weighted share (`probe_score`). No model, linear in the conversation; it scores whatever wrote the
summary. The row's stats count the summary's bullets that are talk, not state.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from hermes_pipeline.analysis.probes import MAX_ERRORS, Probes, extract_probes
from hermes_pipeline.analysis.recall import recall, shown_facts
from hermes_pipeline.analysis.score import score
from hermes_pipeline.analysis.speech import is_talk
from hermes_pipeline.stages.base import OUTPUT, QUALITY, Draft, Stage
from hermes_pipeline.stages.plan import Plan
from hermes_pipeline.stages.prune import demoted_in_tail
from hermes_pipeline.transcript import is_tool_result

MISSED_SHOWN = 20    # missed items listed per kind in a manifest row (the counts are always whole)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


class ScoreStage(Stage):
    name = "score"
    phase = 6
    needs = frozenset({OUTPUT})      # it scores the conversation as written
    provides = frozenset({QUALITY})

    def apply(self, draft: Draft, plan: Plan) -> Draft:
        stats: Counter = Counter()
        probes = draft.analysis.probes(plan)
        result = rate(probes, draft.messages, cleared_errors(plan))
        # the headline: the share of the removed span's facts the output keeps (analysis/recall.py, which agrees
        # with the judged exam); the probes' own weighted share beside it, with their kinds
        facts = recall(list(plan.original), list(draft.messages), range(plan.head_end, plan.tail_start))
        result["probe_score"] = result.pop("score")
        result.update(score=facts["score"], per_kind=facts["per_kind"], facts=facts["facts"])
        result["missed"]["facts"] = shown_facts(facts["missed"][:MISSED_SHOWN], draft.analysis.secrets(plan))
        if draft.summary is not None:      # how much of the summary is talk, not state (speech.is_talk)
            bullets = [line for line in draft.summary.text.splitlines() if _BULLET.match(line)]
            talk = sum(is_talk(line) for line in bullets)
            stats["summary_bullets"] = len(bullets)
            stats["summary_chatter_bullets"] = talk
            stats["summary_chatter_share"] = round(talk / len(bullets), 4) if bullets else 0.0
        return draft.but(quality=result, counts=stats)


def cleared_errors(plan: Plan) -> list:
    """Error probes of the head and tail tool outputs prune clears (an oversized tail's, the fit step's): their
    marker keeps only the first error lines, and the summary covers the middle only."""
    cleared = [i for i in sorted(set(demoted_in_tail(plan)) | set(plan.pruned)) if is_tool_result(plan.original[i])]
    return extract_probes(list(plan.original), cleared, max_errors=None).errors[-MAX_ERRORS:] if cleared else []


def rate(probes: Probes, compacted_messages, cleared: list = ()) -> dict:
    """The manifest's `quality`: the score of the last errors (and those of cleared head and tail outputs) and
    every other probe, misses clipped."""
    result = score(replace(probes, errors=probes.errors[-MAX_ERRORS:] + list(cleared)), list(compacted_messages))
    result["missed"] = {kind: items[:MISSED_SHOWN] for kind, items in result["missed"].items()}
    return result
