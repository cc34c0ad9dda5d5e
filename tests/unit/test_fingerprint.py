"""The incremental fingerprint hashes the keys the schema marks as changing the output, and only those."""
import pytest

from hermes_pipeline.config.output_keys import classified_keys, runtime_keys, target_schema_marks
from hermes_pipeline.config.schema import TARGET_SCHEMAS
from hermes_pipeline.state import config_fingerprint
from testkit.builders import compose_config

# What state.py listed by hand before the schema carried the mark: the same keys, so that the
# fingerprints of existing output trees stay as they were (a changed one recompacts everything once).
EARLIER_RUNTIME_LIST = {
    "input.path", "output.dir", "incremental", "progress", "quiet", "runner", "replay", "plugins", "input.paths",
    "summarizer.cache", "summarizer.max_in_flight", "summarizer.retry", "summarizer.breaker",
    "summarizer.max_fallback_share", "summarizer.stop_on_auth_error", "summarizer.api_key_env",
    "summarizer.require_api_key", "context.options.store", "lcm.store", "summarizer.batch"}


def test_every_schema_key_is_classified():
    marks = target_schema_marks()
    unclassified = [key for key, mark in classified_keys() if mark is None and key not in marks]
    for target, schema in TARGET_SCHEMAS.items():
        node = "summarizer" if ".summarizers." in target else "runner"
        unclassified += [f"{node}.{key}" for key, mark in classified_keys(schema, inherited=marks[node])
                         if mark is None]
    assert unclassified == []


@pytest.mark.parametrize("overrides, changed", [
    (("progress=none",), False), (("runner.processes=2",), False), (("quiet=true",), False),
    (("summarizer.retry.attempts=2",), False), (("summarizer.max_in_flight=2",), False),
    (("summarizer.cache.enabled=false",), False), (("replay.turn_gap_s=5",), False),
    (("compression.threshold=0.4",), True), (("model.context_length=32000",), True),
    (("summarizer.input=full",), True), (("summarizer.split.max_parts=4",), True),
    (("output.format=openai",), True), (("pipeline=mask_only",), True),
])
def test_the_fingerprint_follows_the_marks(overrides, changed):
    base = ("input.path=samples", "summarizer=anthropic")
    before = config_fingerprint(compose_config(*base))
    assert (config_fingerprint(compose_config(*base, *overrides)) != before) is changed


def test_the_marks_leave_out_what_the_earlier_list_did():
    cfg = compose_config("input.path=samples", "summarizer=anthropic", "engine=lcm")
    # and model.retired, which came later: which model summaries go to once the run's is retired
    assert set(runtime_keys(cfg)) == EARLIER_RUNTIME_LIST | {"model.retired"}
    # lcm's store is where the originals go: it does not change a fingerprint
    assert config_fingerprint(cfg) == config_fingerprint(
        compose_config("input.path=samples", "summarizer=anthropic", "engine=lcm", "lcm.store=/tmp/elsewhere.sqlite"))
