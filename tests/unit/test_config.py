import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from hermes_pipeline.components import build
from hermes_pipeline.config import ConfigError, validate
from hermes_pipeline.config.files import group_options as _options
from hermes_pipeline.stages.base import Stage
from testkit.env import run_cli


@pytest.mark.parametrize("model", _options("model"))
def test_every_model_config_composes_with_context_and_prices(model, composed_config):
    cfg = composed_config(f"model={model}")
    validate(cfg)
    assert cfg.model.context_length >= 100_000
    assert {"input", "output", "cache_read"} <= set(cfg.model.prices)


@pytest.mark.parametrize("pipeline", _options("pipeline"))
def test_every_pipeline_instantiates_its_stages(pipeline, composed_config):
    cfg = composed_config(f"pipeline={pipeline}")
    stages = [instantiate(s) for s in cfg.pipeline.stages]
    assert stages and all(isinstance(s, Stage) for s in stages)


def test_default_config_builds_the_whole_engine(composed_config):
    components = build(composed_config())
    assert components.engine.name == "compressor"
    assert [s.name for s in components.engine.services.stages] == ["prune", "summarize", "assemble", "cache_mark", "score"]
    assert components.caching.status_line() == "Prompt caching: ENABLED (Claude via Anthropic, 5m TTL)"


def test_spec_defaults(composed_config):
    cfg = composed_config()
    assert OmegaConf.to_container(cfg.compression) | {} == {
        "enabled": True, "threshold": 0.5, "target_ratio": 0.2, "protect_last_n": 20, "protect_first_n": 3,
        "prune_min_chars": 200, "keep_images": 3, "max_tool_arg_chars": 1500,
        "mode": "compact", "target_tokens": None, "target_protect_last_n": 4,
        "summary_context_share": 0.05, "summary_ceiling": 12000}
    assert cfg.hygiene.threshold == 0.85 and cfg.hygiene.min_messages == 4
    assert cfg.prompt_caching.cache_ttl == "5m"
    assert cfg.auxiliary.compression.model is None and cfg.auxiliary.compression.provider == "auto"


@pytest.mark.parametrize("override, named", [
    ("compression.threshold=1.5", "compression.threshold=1.5 is out of range: must be a number in [0.0, 1.0]"),
    ("compression.target_ratio=0.05", "compression.target_ratio=0.05 is out of range: must be a number in [0.1, 0.8]"),
    ("compression.protect_last_n=0", "compression.protect_last_n=0 is out of range: must be an integer >= 1"),
    ("compression.summary_context_share=0.9", "compression.summary_context_share=0.9 is out of range"),
    ("hygiene.threshold=-0.1", "hygiene.threshold=-0.1 is out of range"),
    ("prompt_caching.cache_ttl=10m", "prompt_caching.cache_ttl='10m' is not allowed: must be one of 5m, 1h"),
    ("compression.protect_first_n=5", "compression.protect_first_n=5 is fixed by the design"),
    ("model.context_length=10", "model.context_length=10 is out of range"),
    ("compression.mode=train", "compression.mode='train' is not allowed: must be one of compact, fit"),
    ("compression.target_tokens=0", "compression.target_tokens=0 is out of range"),
])
def test_out_of_range_values_fail_naming_key_and_range(override, named, composed_config):
    with pytest.raises(ConfigError) as error:
        validate(composed_config(override))
    assert named in str(error.value)


def test_the_cli_refuses_a_bad_value_before_reading_anything(tmp_path):
    result = run_cli(tmp_path / "run", "input=samples", "compression.threshold=2")
    assert result.returncode == 1
    assert "compression.threshold=2" in result.stderr and "[0.0, 1.0]" in result.stderr
    assert not (tmp_path / "run").exists()        # nothing was read: no run folder left behind


def test_caching_state_line_for_other_models(composed_config):
    cfg = composed_config("model=gpt-4o")
    assert build(cfg).caching.status_line() == "Prompt caching: DISABLED (gpt-4o via openai: not a Claude model)"
    forced = build(composed_config("model=gpt-4o", "prompt_caching.enabled=true"))
    assert forced.caching.enabled
    one_hour = build(composed_config("prompt_caching.cache_ttl=1h"))
    assert one_hour.caching.status_line().endswith("1h TTL)")
