"""Leaner summary requests (`summarizer.input=digest`): long tool outputs sent as what they say.

A model summarizing a middle needs from a 50,000-character file read or build log
what a reader would note: which call it answered (its path or command), how it
ended (an exit status, an error flag), its error lines, the identifiers later
turns use, its first and last lines. The rest is what the Hermes agent drops too
before it asks for a summary (`[read] path=... (49,929 chars result)`). Long
string arguments of calls (a whole file written, an edit's old and new text)
keep their head. Everything else goes as it is: user and assistant turns, short
outputs, the calls' paths and commands. The probes (quality.Probes) decide which
identifiers and error lines must survive; the artifact-trail guard still checks
the model's summary afterwards.
"""
from __future__ import annotations

import json
import re

from hermes_pipeline.analysis.artifacts import call_arguments, paired_results, shell_command
from hermes_pipeline.analysis.tool_output import clip_verbatim, error_lines, normalize
from hermes_pipeline.summarizers.llm.prompt import defuse
from hermes_pipeline.transcript import message_text, role, tool_calls

LONG_OUTPUT_CHARS = 400      # a tool output longer than this is sent as its digest (when that halves it)
EDGE_LINES = 1               # first and last lines kept of a long output
LINE_CHARS = 160             # each kept line, at most
MAX_ERROR_LINES = 8          # error lines of one output (the last ones, as the probes keep the last)
LONG_ARGUMENT_CHARS = 400    # a longer string argument of a call keeps its head ...
ARGUMENT_HEAD = 160          # ... this long
_KEY_ARGUMENTS = ("file_path", "path", "notebook_path", "command", "cmd", "pattern", "query", "url", "description")
_EXIT = re.compile(r"(?i)\b(?:exit(?:ed with)?(?: code| status)?|returned)[ :=]+(-?\d{1,3})\b")


def _clip(line: str, limit: int = LINE_CHARS) -> str:
    line = normalize(line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _quoted(line: str) -> str:
    """A kept line of output; one that imitates the prompt's own labels is shown as quoted, as whole
    outputs are (prompt.defuse), whatever it is put behind."""
    return defuse(_clip(line))


def call_label(call: dict | None) -> str:
    """`Read file_path=src/a.c`: the tool and the argument a reader recognises it by."""
    if call is None:
        return "a tool call"
    name = str((call.get("function") or {}).get("name") or "tool")
    command = shell_command(call)
    if command is not None:
        return f"{name} `{_clip(command, 200)}`"
    args = call_arguments(call)
    key = next((k for k in _KEY_ARGUMENTS if isinstance(args.get(k), str) and args[k]), None)
    return f"{name} {key}={_clip(args[key], 200)}" if key else name


def digest_output(call: dict | None, result: dict, text: str, wanted_ids: dict[str, str]) -> str:
    """The digest of one long tool output: a header line, then what of it a summary may need."""
    lines = [line for line in text.splitlines() if line.strip()]
    status = []
    if result.get("is_error"):
        status.append("reported as an error")
    exit_code = _EXIT.search(text[:300]) or _EXIT.search(text[-300:])
    if exit_code:
        status.append(f"exit status {exit_code.group(1)}")
    head = (f"[digest of the {len(text):,}-character output of {call_label(call)}, {len(lines):,} lines"
            + (f"; {', '.join(status)}" if status else "") + "]")
    parts = [head]
    edge = EDGE_LINES if len(lines) > 2 * EDGE_LINES else len(lines)
    parts += [f"first: {_quoted(line)}" for line in lines[:edge]]
    shown = set(lines[:edge])
    errors = [line for line in error_lines(text) if line not in shown][-MAX_ERROR_LINES:]
    parts += [f"error: {defuse(clip_verbatim(line))}" for line in errors]
    ids = [value for value in wanted_ids if value in text]
    if ids:
        parts.append("identifiers: " + ", ".join(ids[:24]))
    if len(lines) > edge:
        parts += [f"last: {_quoted(line)}" for line in lines[-EDGE_LINES:] if line not in shown]
    return "\n".join(parts)


def _shortened_arguments(call: dict) -> dict:
    """The call with each long string argument cut to its head (valid JSON, keys and paths kept)."""
    function = call.get("function") if isinstance(call, dict) else None
    raw = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(raw, str) or len(raw) <= LONG_ARGUMENT_CHARS:
        return call
    try:
        args = json.loads(raw)
    except ValueError:
        return call
    if not isinstance(args, dict):
        return call
    short = {key: (f"{value[:ARGUMENT_HEAD]}…[{len(value) - ARGUMENT_HEAD:,} more characters]"
                   if isinstance(value, str) and len(value) > LONG_ARGUMENT_CHARS else value)
             for key, value in args.items()}
    return {**call, "function": {**function, "arguments": json.dumps(short, ensure_ascii=False)}}


def digest_middle(middle: list[dict], probes=None) -> list[dict]:
    """The middle as the summarizer reads it with input=digest; the input list is not changed."""
    wanted_ids = dict(getattr(probes, "identifiers", None) or {})
    out = list(middle)
    for index, message in enumerate(middle):
        if role(message) != "assistant" or not tool_calls(message):
            continue
        calls = [_shortened_arguments(call) for call in tool_calls(message)]
        if any(new is not old for new, old in zip(calls, tool_calls(message))):
            out[index] = {**message, "tool_calls": calls}
        for call, result, result_index in paired_results(middle, index):
            if result is None:
                continue
            text = message_text(result)
            if len(text) > LONG_OUTPUT_CHARS:
                digest = digest_output(call, result, text, wanted_ids)
                if len(digest) < len(text) // 2:      # a digest nearly as long as the output says less
                    out[result_index] = {**result, "content": digest}
    return out
