"""Transcript formats by name, and detection of a file's format and layout.

Detection order matters: the specific formats first (the event logs of Claude
Code, pi and Codex, then ShareGPT), OpenAI (which accepts any `{"role": ...}` object)
last. Anthropic claims a record only when it shows
Anthropic-only content (tool_use / tool_result / thinking / image source
blocks, a top-level `system`) and nothing OpenAI-only (tool_calls, role tool,
image_url parts); a plain text chat stays OpenAI, which reads it the same way.
"""
from __future__ import annotations

from typing import Any, Iterable

from hermes_pipeline.formats.anthropic import AnthropicFormat
from hermes_pipeline.formats.base import CONVERSATION, MESSAGE, TranscriptFormat
from hermes_pipeline.formats.claude_code.reader import ClaudeCodeFormat
from hermes_pipeline.formats.codex.reader import CodexFormat
from hermes_pipeline.formats.hermes_store import HermesStoreFormat
from hermes_pipeline.formats.openai import OpenAIFormat
from hermes_pipeline.formats.pi.reader import PiFormat
from hermes_pipeline.formats.sharegpt import ShareGPTFormat

FORMATS: dict[str, TranscriptFormat] = {}


def register_format(fmt: TranscriptFormat) -> None:
    FORMATS[fmt.name] = fmt


def get_format(name: str) -> TranscriptFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown transcript format {name!r}; known: {', '.join(sorted(FORMATS))}") from None


def detect_format(value: Any) -> tuple[TranscriptFormat, str] | None:
    """The first registered format (in detection order) that recognises this record."""
    for fmt in FORMATS.values():
        layout = fmt.detect(value)
        if layout:
            return fmt, layout
    return None


def detect_format_in(values: Iterable[Any]) -> tuple[TranscriptFormat, str] | None:
    """Detection over several records (a file's first ones): the first format, in
    detection order, that recognises any of them. An Anthropic one-message-per-line
    file whose first line is a plain `{"role": "user", "content": "..."}` is
    Anthropic once a later line shows a tool_use block."""
    values = list(values)
    for fmt in FORMATS.values():
        for value in values:
            layout = fmt.detect(value)
            if layout:
                return fmt, layout
    return None


for _fmt in (ClaudeCodeFormat(), PiFormat(), CodexFormat(), ShareGPTFormat(), AnthropicFormat(), OpenAIFormat(),
             HermesStoreFormat()):
    register_format(_fmt)

__all__ = ["CONVERSATION", "MESSAGE", "FORMATS", "TranscriptFormat", "detect_format", "detect_format_in",
           "get_format", "register_format"]
