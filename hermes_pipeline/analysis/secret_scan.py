"""A conversation's secrets, found once: which of its texts hold one, and the values to keep out of a summary.

Redaction costs what leaves, not what is read. One pass with literal hints over every text of the
conversation (redact.suspects) picks the few texts a secret pattern may match; only those are redacted
and searched for secret values. The summarizer then reads the conversation as redact_deep would give it,
with every message that holds nothing to redact passed as it is (not copied), and its summary is cleaned
with the same fragment rule as before (redact.without_fragments).
"""
from __future__ import annotations

from hermes_pipeline.analysis.artifacts import string_leaves
from hermes_pipeline.analysis.redact import redact_deep, redact_secrets, secrets_in, suspects, without_fragments


class SecretScan:
    def __init__(self, messages):
        """`messages`: a conversation's messages (a list, or any JSON value)."""
        self._messages = list(messages)            # held: the ids below stay theirs
        self._scanned = {id(m) for m in self._messages}
        texts = list(dict.fromkeys(string_leaves(self._messages)))
        found = [texts[i] for i in sorted(suspects(texts))]
        self._redacted = {text: clean for text in found if (clean := redact_secrets(text)) != text}
        self.secrets = secrets_in(found)           # as secrets_in(every text): the others hold none

    def clean(self, message):
        """`message` as redact_deep(message) is; shared, not copied, where nothing in it is redacted (a
        summarizer only reads what it is given)."""
        if id(message) not in self._scanned:
            return redact_deep(message)
        return self._clean(message) if self._redacted else message

    def _clean(self, value):
        if isinstance(value, str):
            return self._redacted.get(value, value)
        if isinstance(value, dict):
            cleaned = {k: self._clean(v) for k, v in value.items()}
            return value if all(cleaned[k] is v for k, v in value.items()) else cleaned
        if isinstance(value, list):
            cleaned = [self._clean(v) for v in value]
            return value if all(a is b for a, b in zip(cleaned, value)) else cleaned
        return value

    def summary(self, text: str) -> str:
        """A summary as it may leave: secrets redacted, and no word holding a fragment of a secret of the
        conversation."""
        return without_fragments(redact_secrets(text), self.secrets)
