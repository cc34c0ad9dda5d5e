"""Artifact detection shared by the quality probes and the embedded summarizer.

Which tool calls write, edit, delete or read which files, and which command
lines they run. Pure functions, one regex pass each; no model involved.
What their outputs say (error lines, identifiers): tool_output.py.
"""
from __future__ import annotations

import functools
import json
import re
import shlex

from hermes_pipeline.analysis.text_memo import per_conversation
from hermes_pipeline.transcript import message_text, turns

# -- paths ---------------------------------------------------------------------------------

PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file", "dest", "destination")
_WRITE_TOOL = re.compile(r"write|create|save|new_file|put_file", re.I)
_EDIT_TOOL = re.compile(r"edit|replace|patch|apply|insert|modify", re.I)
_DELETE_TOOL = re.compile(r"delete|remove|unlink", re.I)
_READ_TOOL = re.compile(r"read|view|cat\b|open|show|get_file|load", re.I)
_FAILED_RESULT = re.compile(r"^\s*(?:<tool_use_error>|error\b|failed\b)|String to replace not found|"
                            r"No changes to make|has not been read yet", re.I)
_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M)
_DIFF_HEADER = re.compile(r"^--- (?:a/)?(\S+).*\n\+\+\+ (?:b/)?(\S+)", re.M)
_SECTION_PATH = re.compile(r"^§(\S+)", re.M)     # pi's anchored edits name each file after §
_PATH_CHARS = re.compile(r"[\w.@~+%/-]+")
_LINE_SUFFIX = re.compile(r":(?:\d+(?:-\d+)?|raw)$")


def canonical_path(path: str) -> str:
    path = path.strip().strip("'\"`")
    path = _LINE_SUFFIX.sub("", path)
    if path.startswith("file://"):
        path = path[7:]
    while path.startswith("./"):
        path = path[2:]
    return re.sub(r"/{2,}", "/", path).rstrip("/")


# what no file path holds: shell syntax (`2>/dev/null`), code (`textBlocks.map((c:`), a sed script (`s/const/let/`)
_NOT_A_PATH = re.compile(r"[()<>|;&={}\[\]$`\"']|^\d*>|^-|^[sy]([/|#,:]).*\1|^[sy]/[^.]*$|\.\.\.")


# a path under a variable (`${ANALYSIS_WORKDIR}/work/fit.py`, `$HOME/x`) is a path: its variable is its root
_VARIABLE_ROOT = re.compile(r"^\$(?:\{[A-Za-z_]\w*\}|[A-Za-z_]\w*)(?=/)")


def _checkable(path: str) -> bool:
    """A bare word (`build`) can't be told apart from prose, so it is no probe; nor is what only looks like
    a path because it holds a slash or a dot."""
    path = _VARIABLE_ROOT.sub("/VAR", path)
    if re.match(r"^[A-Za-z][\w+.-]*:", path):
        return False   # a URI or a tool's own address (agent:/x, http://), not a file
    if _NOT_A_PATH.search(path):
        return False
    return bool(path) and ("/" in path or "." in path.lstrip(".")) and path not in ("/dev/null", ".", "..")


def is_plain_path(path: str) -> bool:
    """Made only of characters a path token is read with (no spaces, globs or commas)."""
    return bool(_PATH_CHARS.fullmatch(path))


def path_suffixes(path: str) -> list[str]:
    """The path and its tails that keep a directory part, longest first."""
    parts = path.split("/")
    out = [path]
    for k in range(1, len(parts) - 1):
        tail = "/".join(parts[k:])
        if tail and tail not in out:
            out.append(tail)
    return out


def expand_braces(text: str) -> list[str]:
    """Paths named with one level of shell brace expansion: `dir/{a.c,b/c.h}` -> dir/a.c, dir/b/c.h."""
    out = []
    if "{" not in text:     # the scan below costs; most texts have no brace at all
        return out
    for match in re.finditer(r"([\w.@~+%/-]*)\{([\w.@~+%/,-]+)\}", text):
        out += [match.group(1) + item for item in match.group(2).split(",") if item]
    return out


def path_tokens(text: str) -> set[str]:
    """Every path-like token of a text, as written (trailing punctuation dropped), brace groups expanded."""
    out = set()
    for token in _PATH_CHARS.findall(text) + expand_braces(text):
        token = token.rstrip(".,:;")
        if "/" in token or "." in token:
            out.add(canonical_path(token))
    return out


# -- shell commands ------------------------------------------------------------------------

_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_SEGMENT = re.compile(r"&&|\|\||;|\n")
SHELL_TOOL = re.compile(r"bash|shell|terminal|exec|command|cmd|^sh$|^run$", re.I)
# tools that run a project's tests or build without a shell command line (run_tests, build, lint)
RUNNER_TOOL = re.compile(r"test|build|compile|lint|typecheck|pytest|cargo|make", re.I)
# programs whose output is file content or a listing: an "error:" in it is text, not a failure
_VIEWERS = {"cat", "grep", "rg", "ag", "head", "tail", "sed", "awk", "less", "more", "find", "ls", "tree", "echo",
            "wc", "diff", "nl", "printf", "sort", "uniq", "cut", "jq", "stat", "file", "which", "type", "cd", "pwd"}


def strip_heredocs(command: str) -> str:
    """The command without heredoc bodies (they are file contents, not commands)."""
    out, delimiter = [], None
    for line in command.split("\n"):
        if delimiter is not None:
            if line.strip() == delimiter:
                delimiter = None
            continue
        out.append(line)
        match = _HEREDOC.search(line)
        if match:
            delimiter = match.group(1)
    return "\n".join(out)


_NOT_PLAIN = "'\"\\\x0b\x0c\x1c\x1d\x1e\x1f"   # quotes, escapes, and what str.split takes for space but shlex not


def _words(segment: str) -> list[str]:
    if segment.isascii() and not any(char in segment for char in _NOT_PLAIN):
        return segment.split()     # shlex would split on spaces, tabs and newlines alone: the same words
    try:
        return shlex.split(segment, comments=False)
    except ValueError:
        return segment.split()


def _outside_quotes(text: str, pattern: re.Pattern) -> list[str]:
    """`text` split where `pattern` matches outside quotes (`grep -E "a|b"` is one command, not two)."""
    if "'" not in text and '"' not in text:
        return pattern.split(text)
    parts, start, quote, i = [], 0, None, 0
    while i < len(text):
        char = text[i]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif (found := pattern.match(text, i)) and found.end() > i:
            parts.append(text[start:i])
            start = i = found.end()
            continue
        i += 1
    return parts + [text[start:]]


_PIPE = re.compile(r"\|")


@per_conversation   # the score and the summarizer parse the same commands
def command_programs(command: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(program, arguments) of each simple command, pipelines included, heredoc bodies left out."""
    programs = []
    for segment in _outside_quotes(strip_heredocs(command), _SEGMENT):
        for piece in _outside_quotes(segment, _PIPE):
            words = _words(piece)
            while words and (re.match(r"^\w+=", words[0]) or words[0] in ("sudo", "time", "nohup", "env", "exec")):
                words = words[1:]
            if words:
                programs.append((words[0].rsplit("/", 1)[-1], tuple(words[1:])))
    return tuple(programs)


_SETUP = {"cd", "export", "source", "set", "sleep", "pkill", "kill", "rm", "mkdir", "cp", "mv", "touch", "ln", "chmod",
          "true", "false", "timeout", "unset", "pushd", "popd", "clear"}


def command_key(command: str) -> str:
    """The program a command is about (`make`, `pytest`, `cargo test`), for 'fixed later'.

    The last program that is neither a viewer nor a setup step: in `cd build && cmake .. && make | tail`
    that is `make`.
    """
    key = ""
    for program, args in command_programs(command):
        if program in _VIEWERS or program in _SETUP:
            continue
        if program in ("cargo", "npm", "pnpm", "yarn", "go", "git", "uv", "poetry", "just", "bun") and args:
            key = f"{program} {args[0]}"
        elif program in ("python", "python3") and args[:1] == ("-m",) and len(args) > 1:
            key = args[1]
        else:
            key = program
    return key


def is_viewer_only(command: str) -> bool:
    firsts = []
    for segment in _outside_quotes(strip_heredocs(command), _SEGMENT):
        programs = command_programs(segment)
        if programs:
            firsts.append(programs[0][0])
    return bool(firsts) and all(p in _VIEWERS for p in firsts)


def shell_file_actions(command: str) -> list[tuple[str, str]]:
    """(path, action) for files a shell command deletes, moves, creates or edits in place."""
    found: list[tuple[str, str]] = []
    for line in command.split("\n"):
        for match in re.finditer(r"\b(?:cat|printf|echo)\b[^|;&\n]*?(>>?)\s*([^\s;&|<>]+)", line):
            found.append((match.group(2), "edited" if match.group(1) == ">>" else "written"))
    for program, args in command_programs(command):
        plain = [a for a in args if not a.startswith("-")]
        if program == "git" and args[:1] in (("rm",), ("mv",)):
            if args[0] == "rm" and "--cached" in args:
                continue
            program, plain = args[0], [a for a in args[1:] if not a.startswith("-")]
        if program == "rm":
            found += [(p, "deleted") for p in plain]
        elif program in ("mv", "cp") and len(plain) >= 2:
            if program == "mv":
                found += [(p, "moved") for p in plain[:-1]]
            found.append((plain[-1], "written"))
        elif program == "sed" and any(a.startswith("-i") for a in args):
            scripted = any(a == "-e" or a.startswith("-e") for a in args)
            found += [(p, "edited") for p in (plain if scripted else plain[1:])]
        elif program in ("tee", "touch"):
            found += [(p, "written") for p in plain]
    # a loop's `$f` is no file; `$WORK/x.py`, under a variable, is one
    return [(canonical_path(p), a) for p, a in found if _checkable(canonical_path(p))
            and (not p.startswith("$") or _VARIABLE_ROOT.match(p))]


# -- tool calls ----------------------------------------------------------------------------

def call_arguments(call: dict) -> dict:
    """A call's arguments as a dict. Shared with every caller (parsed once per text): read it, never change it."""
    raw = (call.get("function") or {}).get("arguments")
    if isinstance(raw, dict):
        return raw
    return _parsed_arguments(raw) if isinstance(raw, str) else {}


@per_conversation   # the probes, the summarizer and the score read each call several times
def _parsed_arguments(raw: str) -> dict:
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_raw": raw}


def string_leaves(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in string_leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in string_leaves(v)]
    return [] if value is None else [str(value)]


def paired_results(messages: list[dict], index: int) -> list[tuple[dict, dict | None, int]]:
    """(call, result, result index) for each call of the assistant message at `index` (transcript.turns
    pairs them: by position, ids repeat in real data)."""
    turn = next(turns(messages, index))
    position = {id(row): index + 1 + k for k, row in enumerate(turn.rows)}
    return [(call, row, position[id(row)] if row is not None else index) for call, row in zip(turn.calls, turn.answers)]


RESULT_HEAD_CHARS = 300   # file_actions reads no further into a call's result


@functools.lru_cache(maxsize=1024)   # a session uses a few tool names thousands of times
def _action_by_name(name: str) -> str | None:
    """What a tool does to the files it names, by its name alone."""
    for pattern, action in ((_DELETE_TOOL, "deleted"), (_WRITE_TOOL, "written"), (_EDIT_TOOL, "edited"),
                            (_READ_TOOL, "read")):
        if pattern.search(name):
            return action
    return None


@functools.lru_cache(maxsize=1024)
def _is_shell_tool(name: str) -> bool:
    return bool(SHELL_TOOL.search(name))


def file_actions(call: dict, result: dict | None) -> list[tuple[str, str]]:
    """(path, action) for one tool call: written/edited/deleted/moved, or read."""
    name = str((call.get("function") or {}).get("name") or "")
    raw = (call.get("function") or {}).get("arguments")
    head = message_text(result)[:RESULT_HEAD_CHARS] if result else None
    if isinstance(raw, str):   # a pure function of these three: worked out once per conversation
        return list(_file_actions(name, raw, head))
    return list(_file_actions_uncached(name, call_arguments(call), head))


@per_conversation
def _file_actions(name: str, raw: str, head: str | None) -> tuple[tuple[str, str], ...]:
    return _file_actions_uncached(name, _parsed_arguments(raw), head)


def _file_actions_uncached(name: str, args: dict, head: str | None) -> tuple[tuple[str, str], ...]:
    output = head or ""
    failed = head is not None and bool(_FAILED_RESULT.search(output))
    found: list[tuple[str, str]] = []
    subcommand = args.get("command") if isinstance(args.get("command"), str) else ""
    if subcommand in ("create", "str_replace", "insert", "view", "undo_edit"):
        action = {"create": "written", "view": "read"}.get(subcommand, "edited")   # str_replace_based_edit_tool
    else:
        action = _action_by_name(name)
    if action:
        for key in PATH_KEYS:
            if isinstance(args.get(key), str):
                found.append((args[key], action))
    for text in string_leaves({k: v for k, v in args.items() if k not in PATH_KEYS}):
        # each header holds its literal: a file's content without one is not scanned line by line
        for add, path, moved in _PATCH_HEADER.findall(text) if "*** " in text else ():
            if add or moved:
                found.append((path or moved, {"Add": "written", "Update": "edited", "Delete": "deleted"}.get(add, "written")))
        for old, new in _DIFF_HEADER.findall(text) if "--- " in text and "\n+++ " in text else ():
            if new == "/dev/null":
                found.append((old, "deleted"))
            else:
                found.append((new, "written" if old == "/dev/null" else "edited"))
        if action == "edited" and "§" in text:
            found += [(p, "edited") for p in _SECTION_PATH.findall(text)]
    if _is_shell_tool(name) and subcommand not in ("view", "create", "str_replace", "insert"):
        command = next((args[k] for k in ("command", "cmd", "script") if isinstance(args.get(k), str)), "")
        found += shell_file_actions(command)
    if failed:
        found = [(p, a) for p, a in found if a == "read"]
    if action == "written" and "updated" in output[:200].lower():
        found = [(p, "edited" if a == "written" else a) for p, a in found]
    return tuple((canonical_path(p), a) for p, a in found if _checkable(canonical_path(p)))


def shell_command(call: dict) -> str | None:
    """The command line a shell, test or build tool ran (a runner tool without one: its name)."""
    name = str((call.get("function") or {}).get("name") or "")
    args = call_arguments(call)
    command = next((args[k] for k in ("command", "cmd", "script") if isinstance(args.get(k), str)), None)
    if command in ("view", "create", "str_replace", "insert", "undo_edit"):
        return None    # str_replace_based_edit_tool's sub-commands
    if SHELL_TOOL.search(name) and command is not None:
        return command
    if RUNNER_TOOL.search(name) and not _WRITE_TOOL.search(name) and not _EDIT_TOOL.search(name):
        return command or name
    return None
