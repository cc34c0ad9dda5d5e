"""Every option of every config group (each conf/<group>/*.yaml) composes, validates and builds its component:
a YAML that a run can name is one a run can start with."""
import pytest
from omegaconf import OmegaConf

from hermes_pipeline.components import build
from hermes_pipeline.config.files import config_dir, group_options

GROUPS = sorted(p.name for p in config_dir().iterdir() if p.is_dir() and list(p.glob("*.yaml")))
OPTIONS = [(group, option) for group in GROUPS for option in group_options(group)]
# what an LLM summarizer needs to be built (a key), and a model of its provider
NEEDS = {("summarizer", "anthropic"): ("ANTHROPIC_API_KEY", "model=claude-sonnet-4-5"),
         ("summarizer", "openai"): ("OPENAI_API_KEY", "model=gpt-4o")}


def test_the_groups_are_the_ones_a_run_picks():
    assert GROUPS == ["engine", "model", "pipeline", "runner", "summarizer"]
    assert len(OPTIONS) == 14


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_group_option_builds_its_component(group, option, composed_config, tmp_path, monkeypatch):
    key, model = NEEDS.get((group, option), (None, None))
    if key:
        monkeypatch.setenv(key, "sk-test-not-used")      # built, never called
    extra = [model] if model else []
    if (group, option) == ("runner", "dask"):
        extra.append("runner.n_workers=1")          # a LocalCluster is started: one worker is enough
    cfg = composed_config(f"{group}={option}", *extra)
    built = build(cfg, tmp_path / "run")       # validates, then builds summarizer, engine and runner
    try:
        yaml = OmegaConf.load(config_dir() / group / f"{option}.yaml")
        if group == "model":
            assert built.engine.services.model_name == yaml.name == option
        elif group == "summarizer":
            assert built.summarizer.name == yaml.name == option
        elif group == "engine":
            assert built.engine.name == yaml.context.engine == option
        elif group == "pipeline":
            assert [f"{type(s).__module__}.{type(s).__name__}" for s in built.engine.services.stages] == \
                [stage._target_ for stage in yaml.stages]
        else:
            assert built.runner.name == yaml.name == option
    finally:
        built.close()
