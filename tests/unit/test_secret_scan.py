"""The literal pre-filter and the once-per-conversation scan find every secret the patterns find.

The reference is each secret pattern run on the whole text with no hint in front of it: a text it
matches must be a suspect, and the scan must give what redact_deep and secrets_in give.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_pipeline.analysis import redact
from hermes_pipeline.analysis.artifacts import string_leaves
from hermes_pipeline.analysis.redact import REDACTED, redact_deep, secrets_in, suspects, without_fragments
from hermes_pipeline.analysis.secret_scan import SecretScan
from testkit.env import examples

# pieces the patterns are made of, so that random texts often come close to a secret, or make one
PIECES = ["sk-", "sk-ant-", "proj-", "ghp_", "ghs_", "github_pat_", "xoxb-", "AKIA", "AIza", "sk_live_", "rk_test_",
          "hf_", "eyJ", ".", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "://", "https://",
          "user", ":", "@", "=", ": ", "\"", "'", "\\\"", " ", "\n", "\t", ",", ";", "\0", "Bearer ", "BEARER\t",
          "token", "TOKEN", "api_key", "API-KEY", "apikey", "Secret", "aws_secret_access_key", "access-key",
          "password", "passwd", "PWD", "my_", "x-", "İ", "ı", "ſ", "K", "tokİn", "paſsword", "apı_key",
          "AAAAAAAAAAAAAAAAAAAAAAAA", "a1b2c3d4e5f6g7h8", "0123456789", "Qm9vayBvZiBTZWNyZXRz", "value"]
LABELS = ["token", "TOKEN", "api_key", "API-KEY", "apikey", "Secret", "aws_secret_access_key", "access-key",
          "password", "passwd", "PWD", "tokİn", "paſsword", "apı_key", "ACCESSKEY", "x_token", "mytoken"]
SEPARATORS = ["=", ":", " = ", ": ", "\": \"", "\\\":\\\"", "'='", "\t:\t", " ", "-"]
VALUES = ["a1b2c3d4e5f6g7h8", "hunter2hunter2", "short", "x" * 6, "[REDACTED]", "os.environ[KEY]"]
LABELLED = st.tuples(st.sampled_from(LABELS), st.sampled_from(SEPARATORS), st.sampled_from(VALUES)).map("".join)
URL = st.tuples(st.sampled_from(["https", "postgres", "git+ssh"]), st.sampled_from(["://", ":/"]),
                st.sampled_from(["deploy", "u", ""]), st.sampled_from([":", ""]),
                st.sampled_from(["Pa55w0rd", "p", ""]), st.sampled_from(["@", "/"]),
                st.just("db.internal")).map("".join)
PIECE = st.one_of(st.sampled_from(PIECES), st.text(max_size=8), LABELLED, URL)
TEXT = st.lists(PIECE, max_size=10).map("".join)


def matched_by_a_pattern(text: str) -> bool:
    """Whether any secret pattern matches `text` as it is, no hint asked first."""
    patterns = [*redact._SECRET_PATTERNS, redact._URL_CREDENTIALS, redact._LABELLED]
    return any(p.search(text) for p in patterns)


@settings(max_examples=examples(600), deadline=None)
@given(st.lists(TEXT, max_size=6))
def test_every_text_a_pattern_matches_is_a_suspect(texts):
    found = suspects(texts)
    for index, text in enumerate(texts):
        if matched_by_a_pattern(text):
            assert index in found, text
    assert found <= set(range(len(texts)))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]),
                                       "content": st.one_of(TEXT, st.lists(st.fixed_dictionaries({"text": TEXT}),
                                                                           max_size=3))}), max_size=5))
def test_the_scan_redacts_and_finds_what_redact_deep_and_secrets_in_do(messages):
    scan = SecretScan(messages)
    assert [scan.clean(m) for m in messages] == [redact_deep(m) for m in messages]
    everything = string_leaves(messages)
    reference = set()
    for text in everything:        # secrets_in text by text, each found by its own pass
        reference |= secrets_in([text])
    assert scan.secrets == reference == secrets_in(everything)


def test_a_message_without_a_secret_is_passed_as_it_is_and_one_with_a_secret_is_a_copy():
    clean = {"role": "user", "content": [{"type": "text", "text": "run the tests, then the token count"}]}
    holding = {"role": "user", "content": [{"type": "text", "text": "ok"},
                                           {"type": "text", "text": "api_key=a1b2c3d4e5f6g7h8 please"}]}
    scan = SecretScan([clean, holding])
    assert scan.clean(clean) is clean
    cleaned = scan.clean(holding)
    assert cleaned["content"][1]["text"] == f"api_key={REDACTED} please"
    assert holding["content"][1]["text"] == "api_key=a1b2c3d4e5f6g7h8 please"     # the conversation is untouched
    assert cleaned["content"][0] is holding["content"][0]
    assert scan.secrets == {"a1b2c3d4e5f6g7h8"}


def test_a_message_the_scan_did_not_see_is_redacted_all_the_same():
    scan = SecretScan([{"role": "user", "content": "nothing here"}])
    other = {"role": "user", "content": "the key is sk-ant-" + "A" * 24}
    assert scan.clean(other) == {"role": "user", "content": f"the key is {REDACTED}"}


def test_a_summary_loses_the_secrets_and_their_fragments():
    key = "sk-ant-api03-" + "Qm9vayBvZiBTZWNyZXRz" * 2
    scan = SecretScan([{"role": "user", "content": f"use {key} for the deploy"}])
    summary = scan.summary(f"- The user gave {key}; names: api03, Qm9vayBvZiBTZWNyZXRz, deploy")
    assert "Qm9vay" not in summary and key not in summary
    assert summary == without_fragments(redact.redact_secrets(summary), scan.secrets)
    assert "deploy" in summary


def test_texts_with_a_letter_that_lowers_to_two_characters_are_still_checked():
    """İ lowers to two characters; it is folded to i first, so positions in the lowered text stay the same."""
    texts = ["İİİ harmless", "then password=hunter2hunter2", "İ token: abcdef123456"]
    assert suspects(texts) == {1, 2}
