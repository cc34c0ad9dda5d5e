"""Transcript formats by name, and detection of a file's format and layout."""
from __future__ import annotations

from typing import Any

from hermes_pipeline.formats.base import CONVERSATION, MESSAGE, TranscriptFormat
from hermes_pipeline.formats.openai import OpenAIFormat

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


register_format(OpenAIFormat())

__all__ = ["CONVERSATION", "MESSAGE", "FORMATS", "TranscriptFormat", "detect_format", "get_format", "register_format"]
