"""Conversations in a terminal: one line per message, or a message in full.

The common look of `hermes-pipeline-show` and `hermes-pipeline-lcm`. Plain
text, with bold and dim only on a terminal (not with NO_COLOR, not in a
pipe); no rich: its import alone costs more than a whole short command.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any, TextIO

from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls

ROLE_WIDTH = 9


class Style:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


def style_for(stream: TextIO = sys.stdout) -> Style:
    return Style(stream.isatty() and not os.environ.get("NO_COLOR"))


def width_of(stream: TextIO = sys.stdout) -> int:
    return shutil.get_terminal_size((120, 24)).columns if stream.isatty() else 160


def _arguments(call: dict) -> str:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments", "")
    if isinstance(arguments, str):
        try:        # as it was meant: a JSON object, shown without escapes
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, ensure_ascii=False)


def body(message: dict) -> str:
    """What a message says: its text, then each tool call as `-> name(arguments)`."""
    text = message_text(message)
    content = message.get("content")
    if isinstance(content, list):
        others = [p.get("type", "?") for p in content if isinstance(p, dict) and not isinstance(p.get("text"), str)]
        text += "".join(f"\n[{kind}]" for kind in others)
    calls = [f"-> {(c.get('function') or {}).get('name', '?')}({_arguments(c)})" for c in tool_calls(message)]
    return "\n".join(part for part in [text.strip(), *calls] if part)


def label(message: dict) -> str:
    return "summary" if is_summary_message(message) else role(message) or "?"


def snippet(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:max(width - 1, 1)] + "…"


def one_line(index: int | str, message: dict, width: int, mark: str = "  ", where: str = "") -> str:
    """`mark index role  where  snippet`, cut to the width."""
    head = f"{mark}{index:>5} {label(message):<{ROLE_WIDTH}} " + (f"{where}  " if where else "")
    return head + snippet(body(message), width - len(head))


def in_full(message: dict, indent: str = "        ", max_lines: int | None = None) -> str:
    """The message's text, indented, cut after max_lines lines (saying how many more)."""
    lines = body(message).splitlines() or [""]
    shown = lines if max_lines is None or len(lines) <= max_lines else lines[:max_lines]
    out = [indent + line for line in shown]
    if len(shown) < len(lines):
        out.append(f"{indent}… {len(lines) - len(shown)} more line(s)")
    return "\n".join(out)


def stdout_to_devnull() -> None:
    """After a reader went away (`| head`): Python flushes stdout again at exit, into the closed pipe,
    which would print a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def pretty_json(value: Any) -> str:
    """A record as it was read, over several lines (valid JSON: jq reads it)."""
    return json.dumps(value, ensure_ascii=False, indent=2)
