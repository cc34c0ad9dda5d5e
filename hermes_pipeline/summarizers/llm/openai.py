"""The OpenAI(-compatible) Chat Completions summarizer: its client, request and reply (OpenAICalls); the rest
is LLMSummarizer's."""
from __future__ import annotations

import json
from typing import Any

from hermes_pipeline.config.schema import OpenAISummarizerConfig
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.summarizers.llm.calls import ItemOutcome, LLMCalls, Reply
from hermes_pipeline.summarizers.llm.summarizer import LLMSummarizer
from hermes_pipeline.usage import reported


class OpenAICalls(LLMCalls):
    provider = "openai"
    default_key_env = "OPENAI_API_KEY"
    options = OpenAISummarizerConfig

    def __init__(self, max_tokens_param: str = OpenAISummarizerConfig.max_tokens_param, **kwargs: Any):
        super().__init__(**kwargs)
        # Newer OpenAI models want max_completion_tokens; compatible servers want max_tokens.
        self.max_tokens_param = max_tokens_param

    def _make_client(self, api_key: str):
        import openai
        return openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url,
                                  max_retries=0, timeout=self.timeout)

    def _request(self, user_prompt: str, max_tokens: int, system: str | None = None) -> dict:
        return {
            "model": self.model,
            self.max_tokens_param: max_tokens,
            "messages": [{"role": "system", "content": system or P.INSTRUCTIONS},
                         {"role": "user", "content": user_prompt}],
        }

    async def _send(self, params: dict) -> Reply:
        from openai.types.chat import ChatCompletion
        # the SDK's post() with the same JSON body as chat.completions.create(), without create()'s walk of
        # the params' type annotations: half the client's CPU per call (4.7 -> 2.4 ms), which a wave of
        # replies arriving together waits on (bench_llm_concurrency: 1.04-1.06x -> 1.02-1.03x the ideal)
        response = await self._client.post("/chat/completions", body=params, cast_to=ChatCompletion)
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice and choice.message else ""
        # usage.reported counts cached prompt tokens apart, as Anthropic does, so prices add up the same way
        return Reply(text=text, cut=bool(choice and choice.finish_reason == "length"), usage=reported(response.usage))

    # ---- the Batch API (summarizers/llm/batch.py drives it) -------------------------
    batch_max_items, batch_max_bytes = 50_000, 180 << 20     # the API's limits: 50,000 requests, a 200 MB file
    _ENDED = ("completed", "failed", "expired", "cancelled")

    async def batch_submit(self, items: dict[str, dict]) -> dict:
        """Upload the requests as a JSONL file, start a batch on it: its ledger record."""
        client = self._get_client()
        lines = (json.dumps(self.request_line(key, params)) for key, params in items.items())
        data = ("\n".join(lines) + "\n").encode()
        upload = await client.files.create(file=("hermes-batch.jsonl", data, "application/jsonl"), purpose="batch")
        batch = await client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                            completion_window="24h")
        return {"id": batch.id, "input_file_id": upload.id}

    async def batch_status(self, record: dict) -> tuple[bool, dict[str, int]]:
        batch = await self._get_client().batches.retrieve(record["id"])
        counts = batch.request_counts.model_dump() if batch.request_counts else {}
        return batch.status in self._ENDED, {**counts, batch.status: 1}

    async def batch_results(self, record: dict) -> list[ItemOutcome]:
        client = self._get_client()
        batch = await client.batches.retrieve(record["id"])
        outcomes = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await client.files.content(file_id)
                outcomes += [_outcome(json.loads(line)) for line in content.text.splitlines() if line.strip()]
        return outcomes

    async def batch_cancel(self, record: dict) -> None:
        await self._get_client().batches.cancel(record["id"])

    # ---- the same as files (summarizers/llm/batch_files.py) ---------------------------
    input_format = "OpenAI Batch input"

    @staticmethod
    def request_line(key: str, params: dict) -> dict:
        return {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": params}

    @staticmethod
    def result_outcome(line: dict) -> ItemOutcome:
        """One line of a Batch output or error file: {"custom_id", "response": {"status_code", "body"}, "error"}."""
        if "custom_id" not in line or not isinstance(line.get("response") or line.get("error"), dict):
            raise ValueError('not an OpenAI Batch output line: it needs "custom_id" and "response": '
                             '{"status_code": 200, "body": {chat completion}} (or "error")')
        return _outcome(line)

    def _status_error(self):
        import openai
        return openai.APIStatusError

    def _connection_error(self):
        import openai
        return openai.APIConnectionError


class OpenAISummarizer(LLMSummarizer):
    """summarizer=openai."""
    calls_class = OpenAICalls


_LINE_STATES = {"batch_expired": "expired", "batch_cancelled": "canceled"}


def _outcome(line: dict) -> ItemOutcome:
    """One line of a batch's output or error file."""
    key, response, error = str(line.get("custom_id")), line.get("response") or {}, line.get("error") or {}
    body = response.get("body") or {}
    if response.get("status_code") == 200 and body.get("choices"):
        choice = body["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
        return ItemOutcome(key, "succeeded", reply=Reply(text=text, cut=choice.get("finish_reason") == "length",
                                                         usage=reported(body.get("usage"))))
    if error.get("code") in _LINE_STATES:
        return ItemOutcome(key, _LINE_STATES[error["code"]])
    detail = body.get("error") if isinstance(body.get("error"), dict) else error
    return ItemOutcome(key, "errored", status=response.get("status_code"),
                       error_type=str(detail.get("type") or detail.get("code") or ""),
                       error=str(detail.get("message") or ""))
