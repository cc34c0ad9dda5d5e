"""Every token budget, as one pure function of the config and the context length."""
from __future__ import annotations

from dataclasses import dataclass

SUMMARY_SHARE = 0.20          # summary budget = content tokens x this ...
SUMMARY_FLOOR = 2_000         # ... at least this ...
SUMMARY_CONTEXT_SHARE = 0.05  # ... at most context x this ...
SUMMARY_CEILING = 12_000      # ... and never more than this


@dataclass(frozen=True)
class Budgets:
    context_length: int
    threshold_tokens: int       # the agent layer fires at or above this
    hygiene_tokens: int         # the safety-net layer fires at or above this
    tail_token_budget: int      # tokens of recent messages kept verbatim
    max_summary_tokens: int

    def summary_tokens(self, content_tokens: int) -> int:
        """Target size of a summary of `content_tokens` tokens of middle."""
        wanted = max(int(content_tokens * SUMMARY_SHARE), SUMMARY_FLOOR)
        return min(wanted, self.max_summary_tokens)


def compute_budgets(context_length: int, threshold: float, target_ratio: float,
                    hygiene_threshold: float) -> Budgets:
    threshold_tokens = int(context_length * threshold)
    return Budgets(
        context_length=context_length,
        threshold_tokens=threshold_tokens,
        hygiene_tokens=int(context_length * hygiene_threshold),
        tail_token_budget=int(threshold_tokens * target_ratio),
        max_summary_tokens=min(int(context_length * SUMMARY_CONTEXT_SHARE), SUMMARY_CEILING),
    )


def budgets_from_config(cfg) -> Budgets:
    return compute_budgets(
        context_length=int(cfg.model.context_length),
        threshold=float(cfg.compression.threshold),
        target_ratio=float(cfg.compression.target_ratio),
        hygiene_threshold=float(cfg.hygiene.threshold),
    )
