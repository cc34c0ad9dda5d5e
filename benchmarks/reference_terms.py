"""What the reference benchmark measures a summary by: salient terms and chatter.

Both are defined here, for the benchmark alone, independently of how the
embedded summarizer picks or filters its lines (it must not grade its own
homework with its own patterns).

Salient terms of a summary (`salient_terms`), each a string matched as an
evaluator would, a case-sensitive substring of the text it is looked for in:
- urls: `http(s)://...`, trailing punctuation removed;
- paths: tokens with a `/` that are clearly paths (start with `/`, `~/`, `./`
  or `../`, end with `/`, or end in a file name with an extension), without a
  `:12` / `:3-40` line suffix; and file names (`name.ext`) written alone;
- identifiers: snake_case and CONSTANT_CASE names (with an `_`), camelCase and
  PascalCase names with an inner capital, dotted names (`series.fitContent`),
  names called as functions (`load(`), LaTeX / C macros (`\\rev`, `#define`d
  names are caught by the case rules);
- numbers: versions (`1.0.53`, `v0.43`, `v5`), numbers with a unit (`900px`,
  `2.5s`, `68%`, `20x`), standards and error codes (`C17`, `E0308`, `TS7026`),
  issue / PR references (`#53`);
- hashes: commit hashes (7-40 hex digits with a digit and a letter).
Terms of fewer than 3 characters, and English words that happen to match
(none of the rules above matches a plain lowercase word), are not terms.

Chatter (`is_chatter`), a bullet that is talk rather than state:
- it opens like a turn of speech: "Let me", "Let's", "I'll", "I will", "I'm",
  "I need", "Now ", "Next,", "OK", "Okay", "Great", "Perfect", "Excellent",
  "Good", "Sure", "Alright", "Actually", "Hmm", "First,";
- it is an acknowledgement alone: one to three words ending in `.` or `!`
  ("Done.", "Fixed.", "All good!");
- under Done / In Progress, it is a shell command line (a backquoted command
  or one whose first word is a common command-line program, or any line with
  `&&`, `||`, ` | `, `2>` or `>/dev/null`);
- under Key Decisions, it is a code fragment (opens with a comment marker,
  or holds two of `{`, `}`, `;`, ` = `, `=>`, `()`, `*/`).
"""
from __future__ import annotations

import re

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
_PATH_TOKEN = re.compile(r"(?<![\w/.~<-])(?:~|\.{1,2})?/?[\w@+-][\w.@+-]*(?:/[\w.@+-]+)*/?")
_EXTENSION = re.compile(r"\.[a-z][a-z0-9]{0,5}$")
_LINE_SUFFIX = re.compile(r":\d+(?:-\d+)?(?::\d+)?$")
_FILE_NAME = re.compile(r"(?<![\w/.-])[\w-]{2,}(?:\.[\w-]+)*\.[a-z][a-z0-9]{0,5}(?![\w(])")
_SNAKE = re.compile(r"(?<![\w.])_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*(?![\w])")
_CAMEL = re.compile(r"(?<![\w.])(?:[a-z]+[A-Z]|[A-Z][a-z0-9]+[A-Z])[A-Za-z0-9]*(?![\w])")
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+(?![\w])")
_CALLED = re.compile(r"(?<![\w.])([A-Za-z_]\w{2,})\(")
_MACRO = re.compile(r"\\[A-Za-z]{2,}")
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?![\w.])|(?<![\w.])v\d+(?![\w.])")
_UNIT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:px|ms|s|KB|MB|GB|K|M|%|x)(?![\w])")
_CODE = re.compile(r"(?<![\w.])[A-Z]{1,4}\d{2,5}(?![\w])")
_REF = re.compile(r"(?<![\w&])#\d+(?![\w])")
_HASH = re.compile(r"(?<![\w])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w])")
_WORD_SPLIT = re.compile(r"\\n(?=[/~.])")     # pi's file lists join paths with a literal "\n"


def _is_path(token: str) -> bool:
    token = token.rstrip(".,;:")
    if "/" not in token or token.startswith("//"):
        return False
    parts = [p for p in token.split("/") if p]
    if not parts:
        return False
    return (token.startswith(("/", "~/", "./", "../")) or token.endswith("/")
            or bool(_EXTENSION.search(parts[-1])))


def salient_terms(text: str) -> dict[str, str]:
    """term -> its kind, in order of first appearance."""
    text = _WORD_SPLIT.sub("\n", text)
    terms: dict[str, str] = {}
    add = lambda term, kind: len(term) >= 3 and terms.setdefault(term, kind)
    for found in _URL.finditer(text):
        add(found.group().rstrip(".,;:"), "urls")
    rest = _URL.sub(" ", text)
    for found in _PATH_TOKEN.finditer(rest):
        token = _LINE_SUFFIX.sub("", found.group().rstrip(".,;:"))
        if _is_path(token):
            add(token, "paths")
    no_paths = _PATH_TOKEN.sub(lambda m: " " if _is_path(_LINE_SUFFIX.sub("", m.group().rstrip(".,;:")))
                               else m.group(), rest)
    for found in _FILE_NAME.finditer(no_paths):
        add(_LINE_SUFFIX.sub("", found.group()), "paths")
    for pattern in (_SNAKE, _CAMEL, _DOTTED, _MACRO):
        for found in pattern.finditer(no_paths):
            if not _FILE_NAME.fullmatch(found.group()):
                add(found.group(), "identifiers")
    for found in _CALLED.finditer(no_paths):
        add(found.group(1), "identifiers")
    for pattern in (_VERSION, _UNIT, _CODE, _REF):
        for found in pattern.finditer(no_paths):
            add(found.group(), "numbers")
    for found in _HASH.finditer(no_paths):
        add(found.group(), "hashes")
    return terms


# -- chatter ----------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(.*)$")
_TALK = re.compile(r"^(?:let me|let's|i'll|i will|i'm|i am|i need|now\b|next,|ok\b|okay|great|perfect|excellent|"
                   r"good\b|sure|alright|actually|hmm|first,)", re.I)
_ACK = re.compile(r"^(?:\S+\s?){1,3}[.!]$")
_PROGRAMS = ("cd", "ls", "cat", "grep", "rg", "find", "make", "cmake", "gcc", "clang", "git", "npm", "npx", "pnpm",
             "yarn", "node", "python", "python3", "pip", "pytest", "cargo", "go", "rm", "mv", "cp", "mkdir", "sed",
             "awk", "echo", "curl", "wget", "head", "tail", "wc", "chmod", "touch", "docker", "bash", "sh", "pkill",
             "kill", "ps", "gh", "ctest", "pdflatex", "bibtex", "latexmk", "./")
_SHELL_SYNTAX = re.compile(r"&&|\|\||\s\|\s|2>|>/dev/null")
_CODE_MARKS = ("{", "}", ";", " = ", "=>", "()", "*/")


def bullets(summary: str) -> list[tuple[str, str]]:
    """(section heading, bullet text) for every bullet of a summary."""
    out, section = [], ""
    for line in summary.splitlines():
        if line.startswith("#"):
            section = line.strip()
            continue
        found = _BULLET.match(line)
        if found:
            out.append((section, found.group(1).strip()))
    return out


def _looks_like_command(text: str) -> bool:
    body = text.strip("`").strip()
    first = body.split(" ", 1)[0] if body else ""
    return bool(_SHELL_SYNTAX.search(body)) or first in _PROGRAMS or first.startswith("./") or (
        text.startswith("`") and bool(re.match(r"^`[a-z][\w.-]* ", text)))


def is_chatter(section: str, text: str) -> bool:
    if _TALK.match(text) or _ACK.match(text):
        return True
    if section in ("### Done", "### In Progress") and _looks_like_command(text):
        return True
    if section == "## Key Decisions":
        stripped = text.lstrip()
        if stripped.startswith(("/*", "//", "#include", "*")):
            return True
        if sum(mark in text for mark in _CODE_MARKS) >= 2:
            return True
    return False


def chatter_share(summary: str) -> tuple[int, int]:
    """(chatter bullets, all bullets)."""
    found = bullets(summary)
    return sum(is_chatter(s, t) for s, t in found), len(found)


def section_empty(summary: str, heading: str) -> bool:
    """Whether a section is absent or has nothing but "(none)" / "Nothing..." in it."""
    lines = summary.splitlines()
    if heading not in [line.strip() for line in lines]:
        return True
    start = [line.strip() for line in lines].index(heading) + 1
    body = []
    for line in lines[start:]:
        if line.startswith("#"):
            break
        if line.strip():
            body.append(line.strip().lstrip("-* ").strip())
    return not body or all(b.lower().startswith(("(none)", "none", "nothing")) for b in body)
