"""engine=hermes: who answers the summary request of Hermes' compressor.

In the agent, Hermes' compressor sends one request per compaction,
`call_llm(task="compression", messages=[its prompt])`, through Hermes' own
provider router (which reads ~/.hermes and creates folders there). In a run the
request goes to this run's summarizer instead:
- an LLM summarizer (summarizer=anthropic|openai): Hermes' prompt, as it is, to the
  run's endpoint and model (auxiliary.compression.base_url / .model, the key from the
  summarizer's environment variable), with its retry settings and request cache. A
  request that still fails is answered by the embedded summarizer, and the row says
  why (`fallback`); 401/403/no credit stops the run, as with our own compressor.
- any other summarizer (the default, embedded one: no key, no endpoint) writes the
  summary of the same middle in-process, from the messages as they were before
  Hermes pruned them (it reads tool outputs, as it does for our compressor).
"""
from __future__ import annotations

import logging
import os
import threading

from hermes_pipeline.analysis.redact import REDACTED, redact_secrets
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.llm.breaker import CircuitBreaker, endpoint_down
from hermes_pipeline.summarizers.llm.calls import Tally
from hermes_pipeline.summarizers.llm.errors import BadReply, CircuitOpen, classify, describe
from hermes_pipeline.summarizers.llm.request_cache import request_key
from hermes_pipeline.summarizers.llm.retries import retrying, waits
from hermes_pipeline.usage import reported

log = logging.getLogger(__name__)
LLM_PROVIDERS = ("anthropic", "openai")


class SummarizerAnswer:
    """The run's summarizer writes the summary of the middle itself."""

    def __init__(self, summarizer: Summarizer):
        self.summarizer = summarizer

    def answer(self, request: SummaryRequest, prompt: list[dict]) -> SummaryResult:
        return self.summarizer.summarize(request)


class EndpointAnswer:
    """Hermes' prompt, unchanged, to the endpoint and model of the run's LLM summarizer."""

    def __init__(self, summarizer: Summarizer):
        s = summarizer.calls       # the LLM summarizer's requests: its endpoint, model, key and settings
        self.provider, self.base_url, self.model, self.label = s.provider, s.base_url, s.model, s.label
        self.key_env, self.timeout, self.attempts = s.key_env, s.timeout, s.attempts
        self.max_output_tokens, self.max_retry_after = s.max_output_tokens, s.max_retry_after
        self.stop_on_auth_error, self.cache = summarizer.model_summaries.stop_on_auth_error, s.cache
        # requests that found the endpoint down, in a row: at the limit, no more
        self.breaker = CircuitBreaker(s.breaker.limit, self.label)
        self._wait = waits(s.initial_backoff, s.max_backoff, s.max_retry_after)
        self._lock = threading.Lock()
        self._client = None
        self.fallback = summarizer    # an LLMSummarizer: it falls back (summarizers/fallback.py)

    def _sdk(self):
        if self.provider == "anthropic":
            import anthropic
            return anthropic
        import openai
        return openai

    def _get_client(self):
        with self._lock:
            if self._client is None:
                sdk = self._sdk()
                make = sdk.Anthropic if self.provider == "anthropic" else sdk.OpenAI
                self._client = make(api_key=os.environ.get(self.key_env) or "not-needed", base_url=self.base_url,
                                    max_retries=0, timeout=self.timeout)   # tenacity retries, and counts them
            return self._client

    def _kind(self, error: BaseException) -> str:
        sdk = self._sdk()
        return classify(error, sdk.APIStatusError, sdk.APIConnectionError)

    def _describe(self, error: BaseException) -> str:
        text = describe(error)
        key = os.environ.get(self.key_env)
        return redact_secrets(text.replace(key, REDACTED) if key and len(key) >= 4 else text)[:400]

    def _attempt(self, prompt: list[dict], tally: Tally) -> str:
        self.breaker.refuse_when_open()
        try:
            text = self._send(prompt, tally)
        except Exception as error:
            if endpoint_down(error, isinstance(error, self._sdk().APIConnectionError)):
                self.breaker.failed("failed requests", self._describe(error))
            raise
        self.breaker.succeeded()
        return text

    def _send(self, prompt: list[dict], tally: Tally) -> str:
        tally.calls += 1
        client = self._get_client()
        if self.provider == "anthropic":   # the Messages API needs max_tokens: the summary is never cut
            response = client.messages.create(model=self.model, max_tokens=self.max_output_tokens, messages=prompt)
            text = "".join(getattr(b, "text", "") for b in response.content if getattr(b, "type", "") == "text")
        else:                              # Hermes sends chat completions without max_tokens
            response = client.chat.completions.create(model=self.model, messages=prompt)
            text = (response.choices[0].message.content or "") if response.choices else ""
        tally.add(reported(response.usage))
        if not text.strip():
            raise BadReply("empty reply")
        return text

    def _complete(self, prompt: list[dict], tally: Tally) -> tuple[str, bool]:
        key = request_key(f"hermes-prompt:{self.provider}@{self.base_url or 'default'}", self.model, prompt)
        hit = self.cache.get(key)
        if hit is not None:
            return hit["text"], True

        def count_retry(state):
            tally.retries += 1
        for attempt in retrying(self.attempts, self._wait, lambda e: self._kind(e) == "retry", count_retry,
                                asynchronous=False):
            with attempt:
                text = self._attempt(prompt, tally)
        self.cache.put(key, {"text": text})
        return text, False

    def answer(self, request: SummaryRequest, prompt: list[dict]) -> SummaryResult:
        tally = Tally(conversation=str(request.conversation_id))
        try:
            text, cached = self._complete(prompt, tally)
        except Exception as error:
            kind, why = self._kind(error), self._describe(error)
            if kind == "fatal" and self.stop_on_auth_error:
                raise SummarizerFatalError(f"{self.label}: the provider refused the credentials or quota ({why}); "
                                           f"check {self.key_env} and the account") from None
            log.log(logging.DEBUG if isinstance(error, CircuitOpen) else logging.WARNING,   # said once, when it opened
                    "%s: Hermes' summary request failed (%s); the embedded summarizer answers",
                    request.conversation_id, why)
            return self.fallback.fall_back(request, f"{self.label}: {why}; used the embedded extractive summary",
                                           SummaryResult("", self.label, usage=tally.usage, calls=tally.calls,
                                                         retries=tally.retries))
        return SummaryResult(text=text, summarizer=self.label, usage=tally.usage, calls=tally.calls,
                             retries=tally.retries, cached=cached)


def summary_answer(summarizer: Summarizer) -> SummarizerAnswer | EndpointAnswer:
    if getattr(summarizer.calls, "provider", None) in LLM_PROVIDERS:
        return EndpointAnswer(summarizer)
    return SummarizerAnswer(summarizer)
