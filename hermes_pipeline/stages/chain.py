"""The stage chain: checked once when it is built, then run on each conversation.

Each stage's counts and CPU time are kept under its own name (datatrove's
`stat_update` / `track_time`, one entry per step): {"prune": {"tool_outputs_pruned": 3,
"seconds": 0.002}, ...}. The time is the thread's CPU time, so conversations
running side by side in threads are each charged their own.
"""
from __future__ import annotations

import time
from collections import Counter

from hermes_pipeline.config import ConfigError
from hermes_pipeline.stages.base import OUTPUT, QUALITY, SOURCE, SUMMARY, Draft, Stage
from hermes_pipeline.stages.plan import Plan

PROVIDERS = {SUMMARY: "summarize", OUTPUT: "assemble", QUALITY: "score"}     # who provides what, for messages
ORDER = "prune -> summarize -> assemble -> cache_mark -> score (boundaries are planned once, before the stages)"


def check_chain(stages: tuple[Stage, ...]) -> None:
    """Stages run in the design's order, each finds what it needs from the stages before it, and the last
    of them leave an assembled conversation to write: else a config error at start-up."""
    phases = [getattr(stage, "phase", 0) for stage in stages]
    names = " -> ".join(getattr(stage, "name", type(stage).__name__) for stage in stages)
    if phases != sorted(phases):
        raise ConfigError(f"pipeline.stages out of order ({names}): the order is {ORDER}")
    have = {SOURCE}
    for stage in stages:
        for need in sorted(set(stage.needs) - have):
            made_by = PROVIDERS.get(need, "another")
            where = "after it" if any(need in s.provides for s in stages) else "nowhere"
            raise ConfigError(f"pipeline.stages ({names}): stage {stage.name!r} needs {need}, which the "
                              f"{made_by} stage provides, and the chain has it {where} (the order is {ORDER})")
        have |= set(stage.provides)
    if OUTPUT not in have:
        raise ConfigError(f"pipeline.stages ({names or 'empty'}) has no assemble stage: nothing would be written "
                          f"(the order is {ORDER})")


class StageChain:
    def __init__(self, stages: tuple[Stage, ...]):
        check_chain(stages)
        self.stages = tuple(stages)

    def provides(self, what: str) -> bool:
        return any(what in stage.provides for stage in self.stages)

    def verbatim(self) -> "StageChain":
        """The stages that leave every kept message as it is (fit mode)."""
        return StageChain(tuple(s for s in self.stages if s.keeps_messages_verbatim))

    def run(self, draft: Draft, plan: Plan) -> tuple[Draft, dict[str, dict]]:
        """The draft after every stage, and each stage's counts and CPU seconds."""
        per_stage: dict[str, dict] = {}
        for stage in self.stages:
            started = time.thread_time()
            draft = stage.apply(draft.but(counts={}), plan)
            entry = dict(Counter(draft.counts))
            entry["seconds"] = time.thread_time() - started
            per_stage[stage.name] = entry
        return draft.but(counts={}), per_stage
