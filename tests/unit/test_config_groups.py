"""Every option of every config group (each conf/<group>/*.yaml) composes, validates and builds its component:
a YAML that a run can name is one a run can start with."""
import pytest
from omegaconf import OmegaConf

from hermes_pipeline.components import build
from hermes_pipeline.config.files import config_dir, group_options
from hermes_pipeline.config.schema import TARGET_SCHEMAS

GROUPS = sorted(p.name for p in config_dir().iterdir() if p.is_dir() and list(p.glob("*.yaml")))
OPTIONS = [(group, option) for group in GROUPS for option in group_options(group)]
# what an LLM summarizer needs to be built (a key), and a model of its provider
NEEDS = {("summarizer", "anthropic"): ("ANTHROPIC_API_KEY", "model=claude-sonnet-4-5"),
         ("summarizer", "openai"): ("OPENAI_API_KEY", "model=gpt-4o")}


def test_the_groups_are_the_ones_a_run_picks():
    assert GROUPS == ["engine", "model", "pipeline", "runner", "summarizer"]
    assert len(OPTIONS) == 15


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
        if group in ("summarizer", "runner"):
            yaml = cfg[group]        # its YAML holds only what differs from its schema's defaults
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


@pytest.mark.parametrize("group,option", [o for o in OPTIONS if o[0] in ("summarizer", "runner")],
                         ids=lambda value: str(value))
def test_a_group_option_repeats_no_default_of_its_schema(group, option, composed_config):
    """Defaults live in the schema only: the YAML starts from them and sets only what differs."""
    yaml = OmegaConf.load(config_dir() / group / f"{option}.yaml")
    schema = TARGET_SCHEMAS[yaml._target_]
    assert f"/schema/{schema.__name__}@_here_" in yaml.defaults
    defaults = OmegaConf.structured(schema)
    repeated = [key for key in yaml if key in defaults and not OmegaConf.is_missing(defaults, key)
                and not OmegaConf.is_interpolation(yaml, key) and yaml[key] == defaults[key]]
    assert repeated == []
    # and the composed option has every key of its schema, at the schema's default unless the YAML says otherwise
    composed = composed_config(f"{group}={option}")[group]
    for key in defaults:
        if key not in yaml and not OmegaConf.is_missing(defaults, key):
            assert composed[key] == defaults[key], key
