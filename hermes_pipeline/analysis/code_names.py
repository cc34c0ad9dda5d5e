"""The names a file change defines or touches: functions, types, macros, constants, fields.

A summary names them beside the file ("vsla_core.c: adds vsla_calc_linear_index,
vsla_indices_valid"), so the agent that resumes knows which symbols exist
without reading the file again. Read from the change itself (a write's content,
an edit's new text less its old text, a patch's added lines), never from the
file on disk. Definitions come first (`def`, `function`, `class`, `struct`,
`#define`, `\\newcommand`, a C function head), then the other names the new text
uses that the old did not, in order of appearance.
"""
from __future__ import annotations

import re

from hermes_pipeline.analysis.artifacts import call_arguments, string_leaves

_DEFINITION = re.compile(
    r"(?:\b(?:def|class|function|fn|func|struct|enum|union|interface|type|typedef|trait|impl|module|macro_rules!)\s+"
    r"\*?([A-Za-z_]\w{2,})"
    r"|#\s*define\s+([A-Za-z_]\w{2,})"
    r"|\\(?:re)?newcommand\*?\{?(\\[A-Za-z]+)"
    r"|\b(?:const|let|var|export const|export function)\s+([A-Za-z_$][\w$]{2,})"
    r"|^[ \t]*(?:static\s+|inline\s+|extern\s+|const\s+|unsigned\s+)*[A-Za-z_][\w]*[\s*]+\**([A-Za-z_]\w{2,})\s*\([^;{}]*\)\s*\{"
    r"|}\s*([A-Za-z_]\w{2,})\s*;)", re.M)
_NAME = re.compile(
    r"\\[A-Za-z]{3,}"                                          # a LaTeX macro
    r"|(?<![\w$.])_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*(?![\w$])"    # snake_case, CONSTANT_CASE
    r"|(?<![\w$.])(?:[a-z]+[A-Z]|[A-Z][a-z0-9]+[A-Z])[A-Za-z0-9]*(?![\w$])"   # camelCase, PascalCase
    r"|(?<![\w$.])[A-Za-z_]\w{2,}(?=\((?!s\)))")               # a name called (not "file(s)")
# paths and file names (`src/a.c`, `vsla_paper_v0.4.pdf`): named as files elsewhere, not names
_PATHISH = re.compile(r"(?<![\w.~@+-])[\w.~@+-]*/[\w./~@+-]*|\b[\w-]+(?:\.[\w-]+)*\.[a-z][a-z0-9]{0,5}\b")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# a file the new text includes or imports: `#include "cpu/a.c"`, `import x from "./y"`, `require("z")`
_INCLUDE = re.compile(r"#\s*include\s*[\"<]([^\">\s]+)[\">]|\bfrom\s+[\"']([^\"'\s]+)[\"']|\brequire\([\"']([^\"'\s]+)[\"']\)")
_EDIT_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"), ("oldText", "newText"), ("old", "new"),
               ("search", "replace"), ("old_text", "new_text"))
_CONTENT_KEYS = ("content", "contents", "text", "file_text", "code", "body", "input")   # input: pi's anchored edits
# words that look like names in any file and name nothing of this one
_COMMON = frozenset({"print", "printf", "sizeof", "return", "include", "define", "ifndef", "endif", "typeof", "assert",
                     "console", "require", "import", "export", "default", "static", "string", "number", "boolean",
                     "function", "length", "push", "map", "filter", "forEach", "toString", "JSON", "Object", "Array",
                     "Math", "String", "Number", "Promise", "async", "await", "self", "this", "super", "init",
                     "__init__", "main", "test", "exit", "free", "malloc", "calloc", "realloc", "memcpy", "memset",
                     "strlen", "strcmp", "fprintf", "snprintf", "size_t", "uint8_t", "uint16_t", "uint32_t",
                     "uint64_t", "int8_t", "int16_t", "int32_t", "int64_t", "bool", "NULL", "None", "True", "False",
                     "\\begin", "\\end", "\\item", "\\label", "\\ref", "\\cite", "\\text", "\\frac", "\\left",
                     "\\right", "\\mathbb", "\\mathcal", "\\mathbf", "\\emph", "\\section", "\\subsection",
                     # keywords of C, CMake, Rust, JavaScript and Python, and words a comment puts after one
                     "else", "elif", "elseif", "endif", "endforeach", "endwhile", "endfunction", "foreach", "list",
                     "while", "switch", "case", "break", "continue", "struct", "char", "void", "long", "short",
                     "double", "float", "unsigned", "signed", "const", "extern", "inline", "enum", "union",
                     "typedef", "volatile", "goto", "mut", "new", "Some", "Err", "cfg", "impl", "pub", "use", "mod",
                     "let", "var", "with", "and", "not", "for", "the", "declarations", "definitions", "tests"})


def _texts(args: dict) -> tuple[str, str]:
    """(new text, old text) of one write or edit call's arguments."""
    new, old = [], []
    for key_old, key_new in _EDIT_PAIRS:
        if isinstance(args.get(key_new), str):
            new.append(args[key_new])
            old.append(args.get(key_old) if isinstance(args.get(key_old), str) else "")
    for key in ("edits", "changes", "replacements"):
        for edit in args.get(key) or [] if isinstance(args.get(key), list) else []:
            if isinstance(edit, dict):
                inner_new, inner_old = _texts(edit)
                new.append(inner_new)
                old.append(inner_old)
    for key in _CONTENT_KEYS:
        if isinstance(args.get(key), str):
            new.append(args[key])
    if not new:      # a patch or an anchored edit: its added lines are the new text
        for text in string_leaves(args):
            if "\n+" in text or text.startswith("+"):
                new += [line[1:] for line in text.splitlines() if line.startswith("+") and not line.startswith("+++")]
                old += [line[1:] for line in text.splitlines() if line.startswith("-") and not line.startswith("---")]
    return "\n".join(new), "\n".join(old)


def names_in(new: str, old: str = "") -> list[str]:
    """Names the new text defines, the files it includes, the names it uses that the old text did not, then
    those both use (the context the change touched); in order, once each."""
    before = _NAME.findall(old) if old else []
    out: dict[str, None] = {}
    for match in _DEFINITION.finditer(_COMMENT.sub(" ", new)):     # "/* type declarations */" defines nothing
        name = next(g for g in match.groups() if g)
        if name not in _COMMON:
            out.setdefault(name, None)
    for found in _INCLUDE.finditer(new):
        name = next(g for g in found.groups() if g)
        if "<" not in found.group(0) or "/" in name:     # <stdio.h>, <cuda_runtime.h>: the system's, not the work's
            out.setdefault(name, None)
    seen = set(before)
    for name in _NAME.findall(_PATHISH.sub(" ", new)):
        # a LaTeX macro counts where it is defined (above), not where a document uses it
        if name not in seen and name not in _COMMON and len(name) >= 3 and not name.startswith("\\"):
            out.setdefault(name, None)
    for name in before:
        if name in new and name not in _COMMON and len(name) >= 3 and not name.startswith("\\"):
            out.setdefault(name, None)
    return list(out)


SCAN_CHARS = 8000    # of a change's new and old text, read for names (a whole file written is mostly body)


def changed_names(call: dict) -> list[str]:
    """The names one write or edit call defines or touches."""
    new, old = _texts(call_arguments(call))
    return names_in(new[:SCAN_CHARS], old[:SCAN_CHARS]) if new else []


_DOTTED = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?![\w$])")
_MENTION = re.compile(_DOTTED.pattern + r"|" + _NAME.pattern)


def _lookup_name(name: str) -> bool:
    """A dotted name counts when one of its parts is a code name (`series.priceToCoordinate`), not a file
    name or a version (`cache.ts`, `v1.2`)."""
    if "." not in name or name.startswith("\\"):
        return True
    parts = name.split(".")
    return not re.fullmatch(r"[a-z0-9]{1,5}", parts[-1]) and any("_" in p or re.search(r"[a-z][A-Z]", p)
                                                                  or p[:1].isupper() for p in parts)


def mentioned_names(texts: list[str], limit: int) -> list[str]:
    """Names the agent and the user wrote most (in how many texts), then most recently: lookup hints
    for what the work was about."""
    count: dict[str, int] = {}
    last: dict[str, int] = {}
    for position, text in enumerate(texts):
        for name in set(_MENTION.findall(_PATHISH.sub(" ", text))):
            if name in _COMMON or len(name) < 4 or not _lookup_name(name):
                continue
            count[name] = count.get(name, 0) + 1
            last[name] = position
    ranked = sorted(count, key=lambda n: (-count[n], -last[n], n))
    return ranked[:limit]


# lines of a change that are not its content: pi's anchors (`§path`, `≔12ab`), a placeholder for evicted text
_NOT_CONTENT = re.compile(r"^(?:§|[≔»«]\w+(?:\.\.\w+)?$|\[[^\]]*\]$)")


def change_excerpt(call: dict) -> str | None:
    """The first line a write or edit call adds (not in the text it replaces), stripped: what the change
    looks like, for a summary to show beside the file."""
    new, old = _texts(call_arguments(call))
    before = {line.strip() for line in old.splitlines()}
    for line in new.splitlines():
        line = line.strip().strip("`")
        if len(line) >= 8 and line not in before and any(c.isalnum() for c in line) and not _NOT_CONTENT.match(line):
            return line
    return None
