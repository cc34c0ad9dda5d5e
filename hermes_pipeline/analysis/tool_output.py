"""What a tool's output says, shared by the quality probes and the embedded summarizer.

Which lines of a command's output are errors; which tokens of a tool result are
identifiers, amounts or other values a later step may use. Pure functions, one
regex pass each; no model involved.
"""
from __future__ import annotations

import re

from hermes_pipeline.analysis.text_memo import per_conversation

ERROR_CHARS = 160         # an error line is matched on its first characters (summaries clip long ones)

# -- errors ------------------------------------------------------------------------------

ERROR_PATTERNS = [re.compile(p) for p in (
    r"(?i)\berror(?:\[\w+\])?:", r"(?m)^[ \t]*\w*(?:Error|Exception)\b(?::|$)", r"(?m)^[ \t]*fatal\b",
    r"\bFAILED\b", r"(?m)^[ \t]*FAIL\b", r"(?m)^[ \t]*E[ \t]{2,}\S", r"npm ERR!", r"make(?:\[\d+\])?: \*\*\*",
    r"Segmentation fault", r"undefined reference to", r"command not found", r"No such file or directory",
    r"Permission denied", r"panicked at", r"CMake Error",
)]
# Literals each pattern cannot match without (None: always scan). A test of `in` costs a
# fraction of a regex scan, and most tool outputs have none of them: same hits, less time.
_ERROR_NEEDS = (None, ("Error", "Exception"), ("fatal",), ("FAILED",), ("FAIL",), ("E  ", "E\t"), None, None,
                None, None, None, None, None, None, None)
_CODE_LINE = re.compile(
    r"^\s*(?:\d+\s*(?:[:|→\t-]|\s)\s*)?(?:raise|except|throw|catch|class|def|if|elif|else|return|try|assert|"
    r"import|from|#|//|/\*|\*|@|const|let|var|fn|pub|impl|func|function|case|printf|fprintf|print\(|log)(?:\b|\W)")


def normalize(text: str) -> str:
    return " ".join(text.split())


# make's "*** [target] Error 2" lines only repeat that something above failed
_ECHO_LINE = re.compile(r"^make(?:\[\d+\])?: \*\*\* (?:\[.*\] Error \d+|Waiting for unfinished jobs)")
MIN_ERROR_CHARS = 12      # a bare "FAILED" says nothing the lines around it don't


_ERROR_WORD = re.compile(r"error(?:\[\w+\])?:")    # ERROR_PATTERNS[0] without (?i) and \b: led by a literal
_FAILED_WORD = re.compile(r"FAILED\b")                # ERROR_PATTERNS[3] without the leading \b


def _word_start(text: str, position: int) -> bool:
    """What \b checks before a word: no word character just before it."""
    return position == 0 or not (text[position - 1].isalnum() or text[position - 1] == "_")


def _error_hits(text: str) -> set[int]:
    """Where ERROR_PATTERNS match. A pattern led by \b or (?i) is slow to scan in Python's re, so the
    two common ones scan for their literal and check the word start themselves (same positions)."""
    hits: set[int] = set()
    lowered = text.lower()
    if "error" in lowered:
        if text.isascii():          # lower() keeps positions
            hits.update(m.start() for m in _ERROR_WORD.finditer(lowered) if _word_start(lowered, m.start()))
        else:
            hits.update(m.start() for m in ERROR_PATTERNS[0].finditer(text))
    if "FAILED" in text:
        hits.update(m.start() for m in _FAILED_WORD.finditer(text) if _word_start(text, m.start()))
    for index, pattern in enumerate(ERROR_PATTERNS):
        needs = _ERROR_NEEDS[index]
        if index in (0, 3) or (needs is not None and not any(literal in text for literal in needs)):
            continue
        if index in _LINE_START_PATTERNS:
            hits.update(_line_start_hits(text, pattern, needs))
        else:
            hits.update(m.start() for m in pattern.finditer(text))
    return hits


_LINE_START_PATTERNS = (1, 2, 4, 5)   # (?m)^... without a newline inside: at most one match a line, at its start


def _line_start_hits(text: str, pattern: re.Pattern, literals: tuple[str, ...]) -> list[int]:
    """Where a line-start pattern matches, trying only the lines that hold one of its literals
    (the same positions as a scan of the whole text, without scanning the lines that cannot match)."""
    return [m.start() for start, end in _lines_holding(text, literals) if (m := pattern.match(text, start, end))]


@per_conversation   # the score and the summarizer read the same tool outputs
def error_lines(text: str) -> tuple[str, ...]:
    """Error lines of one command's output, in order, each normalized; one scan per pattern."""
    hits = sorted(_error_hits(text))
    found, seen, end = [], set(), -1
    for hit in hits:
        if hit < end:
            continue
        start = text.rfind("\n", 0, hit) + 1
        end = text.find("\n", hit)
        end = len(text) if end < 0 else end
        line = text[start:end].strip()      # inner spacing kept: quoted verbatim
        key = normalize(line)
        if len(key) < MIN_ERROR_CHARS or _ECHO_LINE.match(key) or key in seen:
            continue
        seen.add(key)
        if not _CODE_LINE.match(re.sub(r"^[\w./-]+:\d+[:-]\s?", "", key)):
            found.append(line)
    return tuple(found)


def error_probe_text(line: str) -> str:
    """What a summary must contain for an error line to count: its first ERROR_CHARS, whitespace collapsed."""
    return normalize(line)[:ERROR_CHARS]


def clip_verbatim(line: str, limit: int = ERROR_CHARS) -> str:
    """The shortest verbatim prefix whose collapsed form is the line's first `limit` characters."""
    if len(normalize(line)) <= limit:
        return line
    count, space = 0, True
    for position, char in enumerate(line):
        if char.isspace():
            if not space:
                count, space = count + 1, True
        else:
            count, space = count + 1, False
        if count >= limit and not space:
            return line[:position + 1] + "…"
    return line


# -- identifiers ---------------------------------------------------------------------------

_ID_PATTERNS = [(kind, re.compile(p)) for kind, p in (
    ("url", r"https?://[^\s\"'<>`)\]}]+"),
    ("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b"),
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    ("hash", r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b"),
    ("code", r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,}\b"),
    ("id", r"\b[a-z]+(?:_[a-z]+)*_\d{3,}\b"),
    ("port", r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0):\d{2,5}\b"),
    ("number", r"(?<![\w.#])#?\d{6,}\b|#\d{2,6}\b"),
)]
_AMOUNT = re.compile(r"\"(\w*(?:price|amount|balance|total|cost|fee|refund)\w*)\"\s*:\s*(\d{3,}(?:\.\d+)?)\b", re.I)
# the JSON key a value sits under, also as a later element of a list of plain values
_KEY_BEFORE = re.compile(r"\"(\w+)\"\s*:\s*(?:\[\s*(?:\"?[\w.@-]*\"?\s*,\s*)*)?\"?$")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")


# The text's characters by class, one for one: every digit 9, a-f \x01, A-Z \x03, the rest as they are.
_CLASSES = str.maketrans({**{d: "9" for d in "0123456789"}, **{c: "\x01" for c in "abcdef"},
                          **{c: "\x03" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}})
# Literals each pattern cannot match without, looked up in the text or in its classes (None: always
# scan). A hash mixes hex letters and digits, so somewhere one stands next to the other; a code,
# capitals and digits likewise. No pattern matches across a line, so only the lines holding one of
# its literals are scanned: the same matches, in the same order, for a fraction of the time.
_ID_NEEDS = {
    "url": None,
    "email": ("text", ("@",)),
    "uuid": "hint",
    "hash": ("classes", ("\x019", "9\x01")),
    "code": ("classes", ("\x039", "9\x03")),
    "id": ("classes", ("_999",)),
    "port": ("text", ("localhost:", "127.0.0.1:", "0.0.0.0:")),
    "number": ("classes", ("999999", "#99")),
}
_UUID_HINT = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")


def _lines_holding(haystack: str, literals: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line of `haystack` that holds one of `literals`, in order."""
    lines = set()
    for literal in literals:
        at = haystack.find(literal)
        while at >= 0:
            end = haystack.find("\n", at)
            end = len(haystack) if end < 0 else end
            lines.add((haystack.rfind("\n", 0, at) + 1, end))
            at = haystack.find(literal, end)
    return sorted(lines)


def _id_patterns(text: str, wanted: "WantedIdentifiers | None" = None):
    """(kind, pattern, spans) for the identifier patterns worth running on this text: where to run them.
    With `wanted`, patterns that cannot yield a wanted value here are left out first."""
    whole = [(0, len(text))]
    classes = None
    for kind, pattern in _ID_PATTERNS:
        if wanted is not None and not wanted.may_yield(kind, text):
            continue
        need = _ID_NEEDS[kind]
        if need is None:
            yield kind, pattern, whole
        elif need == "hint":
            if _UUID_HINT.search(text):
                yield kind, pattern, whole
        else:
            where, literals = need
            if where == "classes" and classes is None:
                classes = text.translate(_CLASSES)     # the same length: its lines are the text's
            spans = _lines_holding(text if where == "text" else classes, literals)
            if spans:
                yield kind, pattern, spans


def _matches(pattern: re.Pattern, text: str, spans: list[tuple[int, int]]):
    for start, end in spans:
        yield from pattern.finditer(text, start, end)


# Kinds whose values are plain words (no characters rstrip or a URL can add): a value of one of these
# kinds is matched whole by its own pattern, so a used token no pattern matches whole is not of that kind.
_WORD_KINDS = ("uuid", "hash", "code", "id", "number")
_FEW = 24     # up to this many wanted values of a kind, a text is searched for them before the pattern runs


class WantedIdentifiers:
    """Which identifier patterns can yield a value that matters (one of `tokens`), and where.

    A tool result's identifier only becomes a probe when a later turn uses it, so
    a pattern none of whose values is among the used tokens need not run at all,
    and one with few wanted values only on texts that contain one of them. The
    values found are those identifier_candidates finds, less ones that cannot
    matter.
    """

    def __init__(self, tokens: set[str] | frozenset[str]):
        self.values = {kind: {t for t in tokens if pattern.fullmatch(t)} for kind, pattern in _ID_PATTERNS
                       if kind in _WORD_KINDS}

    def may_yield(self, kind: str, text: str) -> bool:
        values = self.values.get(kind)
        if values is None:
            return True
        return bool(values) and (len(values) > _FEW or any(v in text for v in values))


def identifier_candidates(text: str, wanted: WantedIdentifiers | None = None) -> list[tuple[str, str]]:
    """(value, what it is) for id-like tokens of a tool result; the JSON key names it when there is one.

    With `wanted`, patterns that cannot yield a wanted value in this text are not run.
    """
    out: list[tuple[str, str]] = []
    for kind, pattern, spans in _id_patterns(text, wanted):
        for match in _matches(pattern, text, spans):
            value = match.group(0).rstrip(".,;:")
            key = _KEY_BEFORE.search(text, max(0, match.start() - 160), match.start())
            out.append((value, key.group(1) if key else kind))
    out += [(m.group(2), m.group(1)) for m in _AMOUNT.finditer(text)]
    return out


def amounts(text: str) -> list[tuple[str, str]]:
    """(value, its JSON key) for prices, amounts, balances and totals in a tool result."""
    return [(m.group(2), m.group(1)) for m in _AMOUNT.finditer(text)]


@per_conversation   # the same texts are read for probes and again for the score
def use_tokens(text: str) -> frozenset[str]:
    tokens = {m.group(0).rstrip(".,;:") for _, pattern, spans in _id_patterns(text)
              for m in _matches(pattern, text, spans)}
    return frozenset(tokens | set(_NUMBER.findall(text)))
