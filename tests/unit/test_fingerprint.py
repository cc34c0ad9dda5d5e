"""The incremental fingerprint hashes the keys the schema marks as changing the output, and only those."""
import pytest

from hermes_pipeline.config.output_keys import classified_keys, runtime_keys, target_schema_marks
from hermes_pipeline.config.schema import TARGET_SCHEMAS
from hermes_pipeline.run.incremental import config_fingerprint
from testkit.builders import compose_config

# What the incremental state (then state.py) listed by hand before the schema carried the mark: the same keys, so that the
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
    (("compression.summary_context_share=0.1",), True), (("compression.summary_ceiling=6000",), True),
    (("compression.summary_context_share=0.05",), False),       # added later: at its default, as before it was
])
def test_the_fingerprint_follows_the_marks(overrides, changed):
    base = ("input.path=samples", "summarizer=anthropic")
    before = config_fingerprint(compose_config(*base))
    assert (config_fingerprint(compose_config(*base, *overrides)) != before) is changed


def test_the_marks_leave_out_what_the_earlier_list_did():
    cfg = compose_config("input.path=samples", "summarizer=anthropic", "engine=lcm")
    # and what came later: model.retired (which model summaries go to once the run's is retired), and the
    # exam, which judges what was written and changes none of it
    assert set(runtime_keys(cfg)) == EARLIER_RUNTIME_LIST | {"model.retired", "exam"}
    # lcm's store is where the originals go: it does not change a fingerprint
    assert config_fingerprint(cfg) == config_fingerprint(
        compose_config("input.path=samples", "summarizer=anthropic", "engine=lcm", "lcm.store=/tmp/elsewhere.sqlite"))


# Fingerprints of output trees written before the product's modules moved to packages by role (the
# summarizers' classes among them): the same config still hashes the same, so a nightly run does not
# recompact an archive because a class moved. A change of the output (a default, the version) changes
# them on purpose: then update them, with the reason in the commit.
FINGERPRINTED_BEFORE_THE_MOVE = {
    (): "06546e632cb49a81b8128c3f6208b6c3",
    ("summarizer=anthropic",): "104c041b96607b60ebbcacd22b6697eb",
    ("summarizer=openai",): "63893b15b4b65f30dcac0c20d2050e76",
}


@pytest.mark.parametrize("overrides", sorted(FINGERPRINTED_BEFORE_THE_MOVE))
def test_a_moved_class_keeps_the_fingerprint_of_existing_trees(overrides):
    fingerprint = config_fingerprint(compose_config("input.path=samples", *overrides))
    assert fingerprint == FINGERPRINTED_BEFORE_THE_MOVE[overrides]
