"""The OpenAI(-compatible) Chat Completions summarizer: its client, request and reply (the rest is LLMSummarizer)."""
from __future__ import annotations

from typing import Any

from hermes_pipeline.summarizers import prompt as P
from hermes_pipeline.summarizers.llm import LLMSummarizer
from hermes_pipeline.summarizers.llm_calls import Reply
from hermes_pipeline.usage import reported


class OpenAISummarizer(LLMSummarizer):
    provider = "openai"
    default_key_env = "OPENAI_API_KEY"
    default_max_output_tokens = 16384

    def __init__(self, max_tokens_param: str = "max_tokens", **kwargs: Any):
        super().__init__(**kwargs)
        # Newer OpenAI models want max_completion_tokens; compatible servers want max_tokens.
        self.max_tokens_param = max_tokens_param

    def _make_client(self, api_key: str):
        import openai
        return openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url,
                                  max_retries=0, timeout=self.timeout)

    def _request(self, user_prompt: str, max_tokens: int) -> dict:
        return {
            "model": self.model,
            self.max_tokens_param: max_tokens,
            "messages": [{"role": "system", "content": P.INSTRUCTIONS},
                         {"role": "user", "content": user_prompt}],
        }

    async def _send(self, params: dict) -> Reply:
        response = await self._client.chat.completions.create(**params)
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice and choice.message else ""
        # usage.reported counts cached prompt tokens apart, as Anthropic does, so prices add up the same way
        return Reply(text=text, cut=bool(choice and choice.finish_reason == "length"), usage=reported(response.usage))

    def _status_error(self):
        import openai
        return openai.APIStatusError

    def _connection_error(self):
        import openai
        return openai.APIConnectionError
