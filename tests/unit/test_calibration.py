"""The replay against real bills: Claude Code logs with the usage the API reported."""
import pytest
from omegaconf import OmegaConf

from hermes_pipeline.config.schema import ModelConfig
from hermes_pipeline.cost.calibration import calibrate, load_log
from testkit.env import CORPUS, LONG_SESSIONS, ROOT

LOGS = [CORPUS / "claude-code-viewer", CORPUS / "claude-reliability", LONG_SESSIONS / "vsla-claude-sessions"]
SONNET = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(ROOT / "conf" / "model" / "claude-sonnet-4-5.yaml"))
TOLERANCE = 0.20


@pytest.fixture(scope="module")
def report():
    missing = [str(p) for p in LOGS if not p.is_dir()]
    if missing:
        pytest.skip(f"recorded Claude Code logs not found: {', '.join(missing)} "
                    "(set HERMES_CORPUS / HERMES_LONG_SESSIONS)")
    return calibrate(LOGS, SONNET)


def test_replayed_input_bill_is_within_20_percent_in_total(report):
    total = report["total"]
    assert total["requests"] > 800 and total["conversations"] >= 20
    assert abs(total["ratio"] - 1) <= TOLERANCE, total


def test_replayed_input_bill_is_within_20_percent_for_every_session(report):
    off = {s["session"]: s["ratio"] for s in report["sessions"] if abs(s["ratio"] - 1) > TOLERANCE}
    assert not off, off
    assert len(report["sessions"]) == 14


def test_cache_writes_and_reads_each_within_20_percent_in_total(report):
    ratios = report["total"]["ratios"]
    assert abs(ratios["write"] - 1) <= TOLERANCE and abs(ratios["read"] - 1) <= TOLERANCE, ratios


def test_configured_token_scale_matches_the_measured_tokenizer_gap(report):
    measured = report["tokenizer"]["ratio"]
    assert abs(measured / float(SONNET.token_scale) - 1) <= 0.05, measured


def test_one_response_over_several_lines_is_billed_once():
    path = LONG_SESSIONS / "vsla-claude-sessions" / "6dc88126-2048-43a9-b5c2-b9747d5a0301.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found")
    (conversation,) = load_log(path)
    assert len(conversation.usage) == 16        # 27 assistant lines, 16 message ids
    assert conversation.recorded()["read"] == sum(u["cache_read_input_tokens"] for u in conversation.usage.values())


def test_compactions_and_model_switches_of_the_log_are_found():
    path = LONG_SESSIONS / "vsla-claude-sessions" / "9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found")
    main = load_log(path)[0]
    assert len(main.resets) == 1 and main.messages[main.resets[0]]["content"].startswith("[CONTEXT COMPACTION]")
    assert len(main.cold) >= 1                  # Opus -> Sonnet: the new model's cache is empty
