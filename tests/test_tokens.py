import subprocess
import sys
import textwrap

from hermes_pipeline.tokens import IMAGE_TOKENS, TokenCounter, rough_message_tokens, rough_tokens


def test_the_encoding_loads_and_counts_with_the_network_unreachable(tmp_path):
    # A fresh process, every socket refused and an empty tiktoken cache: the
    # offline encoding must still load from the installed package.
    script = textwrap.dedent("""
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network unreachable (test)")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from hermes_pipeline.tokens import TokenCounter
        print(TokenCounter().count_text("hello world, hello tokens <|endoftext|>"))
    """)
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "DATA_GYM_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) > 5


def test_counts_are_exact_cl100k():
    counter = TokenCounter()
    # cl100k: "hello world" is two tokens
    assert counter.count_text("hello world") == 2


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
