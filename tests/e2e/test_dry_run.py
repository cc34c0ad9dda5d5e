"""dry_run=true through the real command line: what a run would do, with no model called and nothing written
but the run folder.

Must hold, on the shared corpus (skipped, saying why, when absent): no request reaches the model (the fake
provider counts them), no transcript is written, and the predicted tokens after are within 5% of a real run's
with an LLM summarizer (the fake provider, through the real SDK).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from hermes_pipeline.testing.fake_provider import FakeProvider
from testkit.env import CORPUS, REAL, ROOT, read_jsonl, run_cli, shared

KEY = "hermesFAKEKEYdry0run"
SAMPLE = ROOT / "samples" / "tau-bench-airline.jsonl"


def llm_run(run_dir: Path, fake: FakeProvider, source: Path, *extra: str, key: str | None = KEY,
            cache: Path | None = None):
    cache = cache or run_dir.parent / f"{run_dir.name}-cache.sqlite"
    return run_cli(run_dir, f"input={source}", "summarizer=anthropic", "model.context_length=8000",
                   f"auxiliary.compression.base_url={fake.base_url}", f"summarizer.cache.path={cache}", *extra,
                   env={"ANTHROPIC_API_KEY": key} if key else {}, timeout=600)


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def assert_dry(run_dir: Path) -> tuple[list[dict], dict]:
    """Only the run folder's records, every summary priced, and the totals the sum of the rows."""
    assert not (run_dir / "transcripts").exists()
    assert files_under(run_dir) <= {"manifest.jsonl", "summary.json", "quarantine.jsonl", "cli.log",
                                    ".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml"}
    rows = read_jsonl(run_dir / "manifest.jsonl")
    summary = json.loads((run_dir / "summary.json").read_text())
    would = summary["dry_run"]
    summarized = [r for r in rows if r["summarizer"] is not None]
    assert all(r["summarizer"] == "extractive" and r["calls"] == 0 and r["dry_run"] for r in summarized)
    for key in ("llm_calls", "input_tokens", "output_tokens", "summaries", "cached"):
        assert would[key] == sum(r["dry_run"][key] for r in summarized), key
    assert would["cost_usd"] == pytest.approx(sum(r["dry_run"]["cost_usd"] for r in summarized), abs=1e-5)
    assert (would["tokens_before"], would["tokens_after"]) == (summary["tokens_before"], summary["tokens_after"])
    assert would["transcripts_written"] is False and summary["summarizer_calls"] == 0
    return rows, summary


def test_a_dry_run_calls_no_model_writes_no_transcripts_and_prices_each_summary(tmp_path):
    cache = tmp_path / "cache" / "requests.sqlite"
    with FakeProvider() as fake:
        result = llm_run(tmp_path / "dry", fake, SAMPLE, "dry_run=true", key=None, cache=cache)   # no key needed
        assert result.returncode == 0, result.stderr
        assert fake.request_count == 0
    assert "Dry run: no model is called and no transcript is written" in result.stdout
    assert "dry run: LLM calls" in result.stdout and "output none (dry run)" in (tmp_path / "dry" / "cli.log").read_text()
    assert not cache.parent.exists()                 # the request cache is only read, never made
    rows, summary = assert_dry(tmp_path / "dry")
    compacted = [r for r in rows if r["status"] == "compacted"]
    assert compacted and summary["dry_run"]["llm_calls"] == len([r for r in rows if r["summarizer"]])
    prices = yaml.safe_load((ROOT / "conf" / "model" / "claude-sonnet-4-6.yaml").read_text())["prices"]
    for row in compacted:
        would = row["dry_run"]
        assert would["summarizer"] == "anthropic:claude-sonnet-4-6" and would["batch"] is False
        # the request holds the middle, the instructions and the budget line: more than the summary it asks for
        assert would["input_tokens"] > would["output_tokens"] > 0
        assert would["cost_usd"] == pytest.approx(
            (would["input_tokens"] * prices["input"] + would["output_tokens"] * prices["output"]) / 1e6, abs=1e-6)


def test_a_dry_run_in_worker_processes_with_the_lcm_engine_writes_nothing_outside_its_folder(tmp_path):
    store = tmp_path / "archive" / "lcm.sqlite"
    with FakeProvider() as fake:
        result = llm_run(tmp_path / "dry", fake, REAL / "tau-bench", "dry_run=true", "runner.processes=2",
                         "engine=lcm", f"lcm.store={store}", f"output.dir={tmp_path / 'out'}", "incremental=true")
        assert result.returncode == 0, result.stderr
        assert fake.request_count == 0
    assert not store.exists() and not (tmp_path / "out").exists()
    assert "dry run: output.dir and incremental are not used" in (tmp_path / "dry" / "cli.log").read_text()
    rows = read_jsonl(tmp_path / "dry" / "manifest.jsonl")
    assert {r["lcm_store"] for r in rows} == {str(tmp_path / "dry" / "lcm.sqlite")}
    assert any(r["status"] == "compacted" and r["dry_run"]["llm_calls"] == 1 for r in rows)


def test_the_dry_run_prices_the_very_request_a_run_sends(tmp_path):
    """After a real run, the same dry run finds each of its requests in the request cache: what it priced is
    byte for byte what the summarizer sent, and a rerun would pay nothing."""
    cache = tmp_path / "requests.sqlite"
    with FakeProvider() as fake:
        real = llm_run(tmp_path / "real", fake, SAMPLE, cache=cache)
        assert real.returncode == 0, real.stderr
        sent = fake.request_count
        dry = llm_run(tmp_path / "dry", fake, SAMPLE, "dry_run=true", cache=cache)
        assert dry.returncode == 0, dry.stderr
        assert fake.request_count == sent
    _, summary = assert_dry(tmp_path / "dry")
    real_calls = json.loads((tmp_path / "real" / "summary.json").read_text())["summarizer_calls"]
    assert summary["dry_run"]["cached"] == summary["dry_run"]["summaries"] == real_calls > 0
    assert summary["dry_run"]["llm_calls"] == 0 and summary["dry_run"]["cost_usd"] == 0


def test_batch_pricing_is_read_from_summarizer_batch_enabled_and_false_without_it(composed_config):
    from hermes_pipeline.components import build_summarizer
    cfg = composed_config("summarizer=anthropic", "dry_run=true")
    plain = build_summarizer(cfg)
    OmegaConf.set_struct(cfg, False)
    cfg.summarizer.batch = {"enabled": True}       # the key the batch APIs add (its summarizer takes it then)
    batch = build_summarizer(cfg)
    assert (plain.pricing.batch, batch.pricing.batch) == (False, True)
    assert batch.pricing.usd(1_000_000, 100_000) == pytest.approx(plain.pricing.usd(1_000_000, 100_000) / 2)
    assert plain.pricing.usd(1_000_000, 100_000) == pytest.approx(3.00 + 1.50)     # Sonnet 4.5: $3 in, $15 out
    plain.close()
    batch.close()


def test_on_the_shared_corpus_a_dry_run_predicts_a_real_runs_tokens_within_5_percent(tmp_path):
    corpus = shared(CORPUS)
    with FakeProvider() as fake:
        dry = llm_run(tmp_path / "dry", fake, corpus, "dry_run=true")
        assert dry.returncode == 0, dry.stderr
        assert fake.request_count == 0
        real = llm_run(tmp_path / "real", fake, corpus, "summarizer.cache.enabled=false")
        assert real.returncode == 0, real.stderr
        requests = fake.request_count
    rows, predicted = assert_dry(tmp_path / "dry")
    actual = json.loads((tmp_path / "real" / "summary.json").read_text())
    assert predicted["statuses"] == actual["statuses"] and predicted["tokens_before"] == actual["tokens_before"]
    assert actual["statuses"]["compacted"] >= 50 and actual["fallbacks"] == 0
    assert predicted["dry_run"]["llm_calls"] == requests == actual["summarizer_calls"]
    error = predicted["tokens_after"] / actual["tokens_after"] - 1
    print(f"dry run tokens after {predicted['tokens_after']:,}, real run {actual['tokens_after']:,} "
          f"({error:+.2%}); {requests} LLM calls predicted and made")
    assert abs(error) <= 0.05
