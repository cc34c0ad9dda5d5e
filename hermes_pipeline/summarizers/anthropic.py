"""The Anthropic Messages API summarizer: its client, request and reply (the rest is LLMSummarizer)."""
from __future__ import annotations

from typing import Any

from hermes_pipeline.summarizers import prompt as P
from hermes_pipeline.summarizers.llm import LLMSummarizer
from hermes_pipeline.summarizers.llm_calls import Reply
from hermes_pipeline.usage import reported


class AnthropicSummarizer(LLMSummarizer):
    provider = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    default_max_output_tokens = 32000

    def __init__(self, cache_ttl: str | None = "5m", **kwargs: Any):
        super().__init__(**kwargs)
        # The instruction block is the same in every call: mark it for prompt caching.
        self.cache_control = {"type": "ephemeral"}
        if str(cache_ttl) == "1h":
            self.cache_control["ttl"] = "1h"

    def _make_client(self, api_key: str):
        import anthropic
        return anthropic.AsyncAnthropic(api_key=api_key, base_url=self.base_url,
                                        max_retries=0, timeout=self.timeout)

    def _request(self, user_prompt: str, max_tokens: int) -> dict:
        return {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": [{"type": "text", "text": P.INSTRUCTIONS, "cache_control": dict(self.cache_control)}],
            "messages": [{"role": "user", "content": user_prompt}],
        }

    async def _send(self, params: dict) -> Reply:
        response = await self._client.messages.create(**params)
        text = "".join(getattr(block, "text", "") for block in response.content
                       if getattr(block, "type", "") == "text")
        return Reply(text=text, cut=response.stop_reason == "max_tokens", usage=reported(response.usage))

    def _status_error(self):
        import anthropic
        return anthropic.APIStatusError

    def _connection_error(self):
        import anthropic
        return anthropic.APIConnectionError
