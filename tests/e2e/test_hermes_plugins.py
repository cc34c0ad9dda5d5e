"""Context-engine plugins written for the Hermes agent, run unmodified.

The plugins subclass the real `agent.context_engine.ContextEngine` of the pinned
hermes-agent (the [hermes] extra, in the test environment) and are laid out the way
Hermes loads them: `plugins/context_engine/<name>/` with `register(ctx)` calling
`ctx.register_context_engine(engine)`, or with only an engine class; or a user plugin
`plugins/<name>/` with a plugin.yaml. The real CLI runs them in a working directory
of its own.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hermes_pipeline.engine.hermes_abi import output_problem, removed_indices, supported_kwargs
from hermes_pipeline.engine.plugins import resolve_engine
from testkit.env import read_jsonl
from tests.e2e.test_plugins import SAMPLE, run_in, workdir  # noqa: F401 - the fixture: a user's own working folder

MARKER = "[marker from a Hermes plugin]"

# Appends one message, saying what Hermes' interface handed it: the message list and the context.
MARKER_PLUGIN = '''
from agent.context_engine import ContextEngine


class MarkerEngine(ContextEngine):
    @property
    def name(self):
        return "marker"

    def on_session_start(self, session_id, **kwargs):
        self.session = f"session {session_id} in {kwargs['hermes_home'].rsplit('/', 1)[-1]}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return True

    def compress(self, messages, current_tokens=None, focus_topic=None):
        first = messages[0]["role"]
        seen = f"{MARKER} {len(messages)} messages from {first}, {current_tokens} tokens, context {self.context_length}"
        return messages + [{"role": "user", "content": f"{seen}, {self.session}"}]


def register(ctx):
    ctx.register_tool("marker_tool", {}, lambda args: "{}")    # a live agent's business: ignored here
    ctx.register_context_engine(MarkerEngine())
'''.replace("{MARKER}", MARKER)

# A plain engine of Hermes' ABC: its own rule for when, a one-line compress().
PLAIN_ENGINE = '''
from agent.context_engine import ContextEngine


class Plain(ContextEngine):
    name = "{name}"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return {when}

    def compress(self, messages, current_tokens=None):
        return {compacted}
'''
# No register(): Hermes makes the one ContextEngine subclass without arguments. It keeps the
# head up to the first user message and the tail from the last one, and drops what is between.
CLASS_ONLY_PLUGIN = PLAIN_ENGINE.format(
    name="between", when="prompt_tokens >= self.context_length // 2",
    compacted='[m for i, m in enumerate(messages) if not users(messages)[0] < i < users(messages)[-1]]') + \
    '\ndef users(messages):\n    return [i for i, m in enumerate(messages) if m["role"] == "user"]\n'
# Drops the last tool result: tool pairing broken, the conversation must not be written.
UNPAIRING_PLUGIN = PLAIN_ENGINE.format(
    name="unpairing", when="True", compacted='[m for m in messages if m is not last_tool_row(messages)]') + \
    '''
def last_tool_row(messages):
    return next((m for m in reversed(messages) if m["role"] == "tool"), None)


def register(ctx):
    ctx.register_context_engine(Plain())
'''


def write_plugin(folder: Path, source: str, manifest: bool = False) -> Path:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(source))
    if manifest:
        (folder / "plugin.yaml").write_text(f"name: {folder.name}\ndescription: a test plugin\nversion: 0.1.0\n")
    return folder


def test_a_hermes_plugin_registering_an_instance_is_used_when_named_and_only_then(workdir):
    write_plugin(workdir / "plugins" / "context_engine" / "marker", MARKER_PLUGIN)
    inputs = read_jsonl(SAMPLE)

    result, rows, run_dir = run_in(workdir)                     # not named: the built-in compressor
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"compressor"}
    assert MARKER not in (run_dir / "transcripts" / "tau.jsonl").read_text()

    result, rows, run_dir = run_in(workdir, "context.engine=marker")
    assert result.returncode == 0, result.stderr
    assert len(rows) == len(inputs) and {r["engine"] for r in rows} == {"marker"}
    assert {r["engine_fallback"] for r in rows} == {None}
    assert {r["status"] for r in rows} == {"compacted"}
    outputs = read_jsonl(run_dir / "transcripts" / "tau.jsonl")
    for before, after, row in zip(inputs, outputs, rows):
        # Hermes' interface: the OpenAI message list, system prompt first; our count; the run's context
        assert after["messages"][:-1] == before["messages"]
        assert after["messages"][-1]["content"] == (
            f"{MARKER} {len(before['messages'])} messages from system, {row['tokens_before']} tokens, context 4000, "
            f"session {before['id']} in {run_dir.name}")      # the session hook: its id, the run folder for files
        assert row["messages_after"] == row["messages_before"] + 1
        # it removed nothing: nothing to probe, so no score (a free 1.0 would hide nothing being checked)
        assert row["quality"]["score"] is None and row["stats"]["messages_removed"] == 0


def test_a_hermes_plugin_class_without_register_is_made_as_hermes_makes_it(workdir):
    write_plugin(workdir / "plugins" / "context_engine" / "between", CLASS_ONLY_PLUGIN)
    result, rows, run_dir = run_in(workdir, "context.engine=between")
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"between"}
    compacted = [r for r in rows if r["status"] == "compacted"]
    unchanged = [r for r in rows if r["status"] == "unchanged"]
    assert compacted and unchanged     # its own should_compress decides: half of the 4,000-token context
    assert all(r["tokens_before"] >= 2000 for r in compacted) and all(r["tokens_before"] < 2000 for r in unchanged)
    for row in unchanged:
        # the ABC's update_model() derived a threshold Between does not use: the reason names both
        assert row["noop_reason"] == (f"engine between: should_compress({row['tokens_before']:,}) said no "
                                      "(its threshold_tokens: 3,000)")
    # scored from what it dropped: the airline tools' identifiers (reservations, flights) between the turns
    for row in compacted:
        quality = row["quality"]
        assert row["stats"]["messages_removed"] == row["messages_before"] - row["messages_after"] > 0
        assert 0 <= quality["score"] <= 1
    assert any(r["quality"]["identifiers"]["total"] > r["quality"]["identifiers"]["kept"] for r in compacted)


def test_a_hermes_user_plugin_with_plugin_yaml_is_found_in_plugins_dirs(workdir, tmp_path):
    hermes_home = tmp_path / "hermes-home"
    write_plugin(hermes_home / "plugins" / "marker", MARKER_PLUGIN, manifest=True)
    result, rows, _ = run_in(workdir, "context.engine=marker", f"plugins.dirs=[{hermes_home}]")
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"marker"} and {r["status"] for r in rows} == {"compacted"}
    # a folder without the manifest is not a Hermes user plugin: the name is not found
    (hermes_home / "plugins" / "marker" / "plugin.yaml").unlink()
    result, rows, _ = run_in(workdir, "context.engine=marker", f"plugins.dirs=[{hermes_home}]")
    assert {r["engine"] for r in rows} == {"compressor"}
    assert "context engine 'marker' not found" in rows[0]["engine_fallback"]


def test_a_hermes_plugin_that_breaks_tool_pairing_fails_only_those_conversations(workdir):
    write_plugin(workdir / "plugins" / "context_engine" / "unpairing", UNPAIRING_PLUGIN)
    result, rows, run_dir = run_in(workdir, "context.engine=unpairing")
    assert result.returncode == 2, result.stderr       # quarantined, the run completed
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and len(rows) == len(read_jsonl(SAMPLE))
    for row in failed:
        assert "engine unpairing tool calls and results not paired" in row["error"], row["error"]
        assert "has no result" in row["error"]
    assert sorted(q["reason"] for q in read_jsonl(run_dir / "quarantine.jsonl")) == sorted(r["error"] for r in failed)
    written = read_jsonl(run_dir / "transcripts" / "tau.jsonl")
    assert len(written) == len(rows) - len(failed)


def test_a_hermes_plugin_needs_hermes_agent_and_says_which_extra(workdir, tmp_path):
    write_plugin(workdir / "plugins" / "context_engine" / "marker", MARKER_PLUGIN)
    shadow = tmp_path / "no-hermes"      # an `agent` package without hermes-agent's modules in it
    (shadow / "agent").mkdir(parents=True)
    (shadow / "agent" / "__init__.py").write_text("")
    result, rows, _ = run_in(workdir, "context.engine=marker", env={"PYTHONPATH": str(shadow)})
    assert result.returncode == 1 and rows == []
    assert "No module named 'agent.context_engine'" in result.stderr
    assert "pip install 'hermes-pipeline[hermes]'" in result.stderr and "Traceback" not in result.stderr


def test_a_hermes_instance_registered_with_context_options_is_refused(tmp_path):
    write_plugin(tmp_path / "plugins" / "context_engine" / "marker", MARKER_PLUGIN)
    resolved = resolve_engine("marker", [tmp_path])
    with pytest.raises(TypeError, match="takes no context.options"):
        resolved.factory(None, tag="x")


def test_removed_indices_follow_the_messages_in_order_by_content():
    m = [{"role": "user", "content": str(i)} for i in range(6)]
    assert removed_indices(m, m) == []
    assert removed_indices(m, m[:2] + [{"role": "user", "content": "summary"}] + m[4:]) == [2, 3]
    # a kept message changed (a note appended) counts as removed; Hermes' private keys do not matter
    changed = [{**m[0], "content": "0 + note"}, *({**x, "_db_persisted": True} for x in m[1:])]
    assert removed_indices(m, changed) == [0]
    repeated = [{"role": "user", "content": "ok"}] * 4
    assert removed_indices(repeated, repeated[:1] + repeated[3:]) == [2, 3]


def test_output_problem_names_what_an_agent_could_not_load():
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "done"}
    assert output_problem([{"role": "user", "content": "hi"}, call, result]) is None
    assert output_problem("text") == "returned a str, not a list of messages"
    assert output_problem([{"content": "x"}]) == "message 0 has no string 'role'"
    assert "tool call 'c1' has no result" in output_problem([call])
    assert "has no call" in output_problem([{"role": "user", "content": "hi"}, call, result, result])


def test_supported_kwargs_filters_by_the_engines_signature():
    def old(messages, current_tokens=None):
        return messages

    def new(messages, **kwargs):
        return messages
    assert supported_kwargs(old, current_tokens=5, focus_topic=None, force=False) == {"current_tokens": 5}
    assert supported_kwargs(new, current_tokens=5, force=False) == {"current_tokens": 5, "force": False}
