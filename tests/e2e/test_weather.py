"""The LLM path in a busy API's weather: the real CLI and SDKs behind an independent fault injector.

hermes_pipeline/testing/fake_weather.py answers one request in 11 as overloaded (529/503), one with a 429
(retry-after 1 s) and one with a 500, and every request longer than its window with a 400
"prompt is too long"; the rest reach the fake provider. The night starts with a burst of
overloaded answers, as the real API sends them at busy hours. At a 16K context the shared long
sessions and 12 conversations of the corpus need a summary. Nearly all of them must get the model's summary, not the
embedded fallback: retries carry the weather, splits answer the 400s, and the circuit
breaker stays closed for an endpoint that answers.
"""
from __future__ import annotations

import json

import pytest

from hermes_pipeline.testing.fake_provider import FakeProvider
from hermes_pipeline.testing.fake_weather import WeatherProxy
from testkit.env import CORPUS, LONG_SESSIONS, SHARED, read_jsonl, run_cli, shared

MODELS = {"anthropic": ("claude-sonnet-4-6", "ANTHROPIC_API_KEY"), "openai": ("gpt-4o", "OPENAI_API_KEY")}   # live models
WINDOW = 12_000      # tokens (a rough 4 characters each): the longest whole requests are refused and must be split
BURST = 4            # the first requests are all refused as overloaded
LATENCY = 0.5        # seconds a summary takes, 10x the first retry wait; a refusal comes at once, as from a real API


@pytest.mark.parametrize("provider,seed", [("anthropic", 1), ("openai", 2)])
def test_busy_api_weather_gives_model_summaries(tmp_path, provider, seed):
    shared(LONG_SESSIONS), shared(CORPUS)
    model, key = MODELS[provider]
    with FakeProvider(default_latency=LATENCY) as fake:
        upstream = fake.base_url if provider == "anthropic" else fake.openai_base_url
        with WeatherProxy(upstream, provider, WINDOW, seed=seed, burst=BURST) as weather:
            result = run_cli(tmp_path / "run", f"input={SHARED}", "model.context_length=16000",
                             f"summarizer={provider}", f"model={model}", f"auxiliary.compression.base_url={weather.url}",
                             f"summarizer.cache.path={tmp_path / 'cache.sqlite'}", "summarizer.retry.initial_backoff=0.05",
                             env={key: "weather-test"}, timeout=600)
    assert result.returncode in (0, 2), result.stderr[-3000:]
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if r["status"] == "compacted"]
    by_model = [r for r in rows if r["summarizer"] == f"{provider}:{model}"]
    assert len(rows) >= 12 and len(by_model) >= 0.9 * len(rows), [r["fallback"] for r in rows]
    # the weather was there, and every kind of it was met
    assert weather.answered["overloaded"] and weather.answered["rate_limited"] and weather.answered["server_error"]
    assert weather.answered["too_long"], weather.answered
    assert any((r["fallback"] or "").startswith("split-merged:") for r in by_model)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["summarizer_retries"] >= 3 and "circuit open" not in result.stderr
    print(provider, dict(weather.answered), f"{len(by_model)}/{len(rows)} model summaries")
