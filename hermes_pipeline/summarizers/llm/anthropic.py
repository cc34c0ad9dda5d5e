"""The Anthropic Messages API summarizer: its client, request and reply (AnthropicCalls); the rest is
LLMSummarizer's."""
from __future__ import annotations

from typing import Any

from hermes_pipeline.config.schema import AnthropicSummarizerConfig
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.summarizers.llm.calls import ItemOutcome, LLMCalls, Reply
from hermes_pipeline.summarizers.llm.summarizer import LLMSummarizer
from hermes_pipeline.usage import reported


class AnthropicCalls(LLMCalls):
    provider = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    options = AnthropicSummarizerConfig

    def __init__(self, cache_ttl: str | None = AnthropicSummarizerConfig.cache_ttl, **kwargs: Any):
        super().__init__(**kwargs)
        # The instruction block is the same in every call: mark it for prompt caching.
        self.cache_control = {"type": "ephemeral"}
        if str(cache_ttl) == "1h":
            self.cache_control["ttl"] = "1h"

    def _make_client(self, api_key: str):
        import anthropic
        return anthropic.AsyncAnthropic(api_key=api_key, base_url=self.base_url,
                                        max_retries=0, timeout=self.timeout)

    def _request(self, user_prompt: str, max_tokens: int, system: str | None = None) -> dict:
        return {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": [{"type": "text", "text": system or P.INSTRUCTIONS, "cache_control": dict(self.cache_control)}],
            "messages": [{"role": "user", "content": user_prompt}],
        }

    async def _send(self, params: dict) -> Reply:
        return _reply(await self._client.messages.create(**params))

    # ---- Message Batches (summarizers/llm/batch.py drives them) -------------------
    batch_max_items, batch_max_bytes = 100_000, 200 << 20    # the API's limits: 100,000 requests, 256 MB

    async def batch_submit(self, items: dict[str, dict]) -> dict:
        """One batch of `items` (cache key -> request; the key is the custom_id): its ledger record."""
        batch = await self._get_client().messages.batches.create(
            requests=[{"custom_id": key, "params": params} for key, params in items.items()])
        return {"id": batch.id}

    async def batch_status(self, record: dict) -> tuple[bool, dict[str, int]]:
        """(ended, counts of its items by state)."""
        batch = await self._get_client().messages.batches.retrieve(record["id"])
        return batch.processing_status == "ended", batch.request_counts.model_dump()

    async def batch_results(self, record: dict) -> list[ItemOutcome]:
        outcomes = []
        async for item in await self._get_client().messages.batches.results(record["id"]):
            result = item.result
            if result.type == "succeeded":
                outcomes.append(ItemOutcome(item.custom_id, "succeeded", reply=_reply(result.message)))
            elif result.type == "errored":
                error = getattr(result.error, "error", None)
                outcomes.append(ItemOutcome(item.custom_id, "errored", error_type=getattr(error, "type", ""),
                                            error=getattr(error, "message", "") or str(result.error)))
            else:          # expired, canceled
                outcomes.append(ItemOutcome(item.custom_id, result.type))
        return outcomes

    async def batch_cancel(self, record: dict) -> None:
        await self._get_client().messages.batches.cancel(record["id"])

    # ---- the same as files (summarizers/llm/batch_files.py) ---------------------------
    input_format = "Anthropic Message Batches requests"

    @staticmethod
    def request_line(key: str, params: dict) -> dict:
        return {"custom_id": key, "params": params}

    @staticmethod
    def result_outcome(line: dict) -> ItemOutcome:
        """One line of a Message Batches results file: {"custom_id", "result": {"type", "message" | "error"}}."""
        result = line.get("result") if isinstance(line.get("result"), dict) else {}
        key, state = str(line.get("custom_id")), result.get("type")
        if state == "succeeded" and isinstance(result.get("message"), dict):
            message = result["message"]
            text = "".join(b.get("text", "") for b in message.get("content") or []
                           if isinstance(b, dict) and b.get("type") == "text")
            return ItemOutcome(key, "succeeded", reply=Reply(text=text, cut=message.get("stop_reason") == "max_tokens",
                                                             usage=reported(message.get("usage"))))
        if state == "errored":
            error = result.get("error") if isinstance(result.get("error"), dict) else {}
            error = error.get("error") if isinstance(error.get("error"), dict) else error
            return ItemOutcome(key, "errored", error_type=str(error.get("type") or ""),
                               error=str(error.get("message") or ""))
        if state in ("expired", "canceled"):
            return ItemOutcome(key, state)
        raise ValueError('not a Message Batches result: it needs "custom_id" and "result": {"type": "succeeded", '
                         '"message": {...}} (or errored, expired, canceled)')

    def _status_error(self):
        import anthropic
        return anthropic.APIStatusError

    def _connection_error(self):
        import anthropic
        return anthropic.APIConnectionError


class AnthropicSummarizer(LLMSummarizer):
    """summarizer=anthropic."""
    calls_class = AnthropicCalls


def _reply(message) -> Reply:
    """A Messages API response (a plain call's, or a batch item's) as the summarizer reads it."""
    text = "".join(getattr(block, "text", "") for block in message.content if getattr(block, "type", "") == "text")
    return Reply(text=text, cut=message.stop_reason == "max_tokens", usage=reported(message.usage))
