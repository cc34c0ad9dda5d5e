"""What an exam's questions are answered from: the compacted conversation, or a baseline beside it.

- `compacted`: the conversation as compaction wrote it (head + summary + tail);
- `head_tail`: the same without the summary (what the summary adds is the difference);
- `summary`: the summary alone;
- `full`: the conversation as read, uncompacted (the ceiling).
"""
from __future__ import annotations

from hermes_pipeline.transcript import SUMMARY_END, is_summary_message, message_text

CONDITIONS = ("compacted", "head_tail", "summary", "full")
BASELINES = ("head_tail", "full")     # what exam.baselines may ask for beside the compacted conversation


def _without_summary(message: dict) -> dict | None:
    """A message without the summary the engine put in it (a summary merged into a tail message keeps the
    rest); None when the message is the summary."""
    text = message_text(message)
    if SUMMARY_END in text and not text.rstrip().endswith(SUMMARY_END):
        rest = text[text.index(SUMMARY_END) + len(SUMMARY_END):].lstrip("\n")
        return {**message, "content": rest}
    return None


def _summary_text(message: dict) -> str:
    text = message_text(message)
    return text[:text.index(SUMMARY_END) + len(SUMMARY_END)] if SUMMARY_END in text else text


def context(condition: str, original: list[dict], compacted: list[dict]) -> list[dict]:
    if condition == "compacted":
        return list(compacted)
    if condition == "full":
        return list(original)
    summaries = [i for i, m in enumerate(compacted) if is_summary_message(m)]
    if condition == "summary":
        return [{"role": "user", "content": _summary_text(compacted[i])} for i in summaries]
    if condition == "head_tail":
        kept = []
        for i, message in enumerate(compacted):
            if i not in summaries:
                kept.append(message)
            elif (rest := _without_summary(message)) is not None:
                kept.append(rest)
        return kept
    raise ValueError(f"no exam condition {condition!r} (one of {', '.join(CONDITIONS)})")
