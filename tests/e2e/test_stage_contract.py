"""The stage contract: a chain checked when it is built, each stage's counts and CPU time in the row and
summed in summary.json, probes made once per conversation."""
import json

import pytest
from hydra.utils import instantiate

from hermes_pipeline.analysis import conversation as analysis_module
from hermes_pipeline.config import ConfigError
from hermes_pipeline.stages.assemble import AssembleStage
from hermes_pipeline.stages.base import StageTools
from hermes_pipeline.stages.cache_mark import CacheMarkStage
from hermes_pipeline.stages.chain import StageChain
from hermes_pipeline.stages.prune import PruneStage
from hermes_pipeline.stages.score import ScoreStage
from hermes_pipeline.stages.summarize import SummarizeStage
from testkit.env import CORPUS, read_jsonl, run_cli, shared


def test_a_chain_without_assemble_is_refused_when_built():
    with pytest.raises(ConfigError, match="needs assembled conversation, which the assemble stage provides, "
                                          "and the chain has it nowhere"):
        StageChain((PruneStage(), SummarizeStage(), CacheMarkStage(), ScoreStage()))
    with pytest.raises(ConfigError, match="no assemble stage: nothing would be written"):
        StageChain((PruneStage(), SummarizeStage()))


def test_a_stage_missing_what_it_needs_is_named():
    needs = "stage 'assemble' needs summary, which the summarize stage provides, and the chain has it nowhere"
    with pytest.raises(ConfigError, match=needs):
        StageChain((PruneStage(), AssembleStage(), CacheMarkStage()))
    with pytest.raises(ConfigError, match="stage 'score' needs assembled conversation"):
        StageChain((PruneStage(), SummarizeStage(), ScoreStage(), ))


def test_mask_only_keeps_the_pruned_middle_by_its_own_setting():
    chain = StageChain((PruneStage(), AssembleStage(middle="pruned"), CacheMarkStage(), ScoreStage()))
    assert [s.name for s in chain.stages] == ["prune", "assemble", "cache_mark", "score"]
    with pytest.raises(ConfigError, match="middle='none'"):
        AssembleStage(middle="none")


def test_stages_get_their_tools_when_built():
    tools = StageTools(counter="a counter")
    stage = instantiate({"_target_": "hermes_pipeline.stages.summarize.SummarizeStage"}, _partial_=True)(tools=tools)
    assert stage.tools is tools


def test_a_pipeline_without_assemble_exits_1_and_reads_nothing(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(run_dir, f"input={CORPUS}",
                     "pipeline.stages=[{_target_:hermes_pipeline.stages.prune.PruneStage},"
                     "{_target_:hermes_pipeline.stages.summarize.SummarizeStage}]")
    assert result.returncode == 1, result.stderr
    assert "no assemble stage: nothing would be written" in result.stderr
    assert not (run_dir / "manifest.jsonl").exists()


def test_probes_are_made_once_per_conversation(monkeypatch):
    from hermes_pipeline.transcript import Conversation
    from testkit.builders import assistant, calls, engine_for, result, system, user
    made = []
    real = analysis_module.extract_probes
    monkeypatch.setattr(analysis_module, "extract_probes", lambda *a, **k: made.append(1) or real(*a, **k))
    messages = [system(), user("Port the parser to src/parse.c."), assistant("On it.")]
    for i in range(8):
        messages += [calls((f"c{i}", "bash", {"command": f"make test{i}"})), result(f"c{i}", "error: boom\n" * 60),
                     user(f"step {i}: " + "go on " * 80), assistant("done " * 100)]
    compaction = engine_for(context_length=4000, protect_last_n=4).compress(Conversation("c", messages, "t:1"))
    assert compaction.outcome.compacted and compaction.outcome.quality is not None
    assert len(made) == 1        # the summarizer, the trail guard and the score share them


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("stages") / "run"
    result = run_cli(run_dir, f"input={shared(CORPUS)}", "model.context_length=16000")
    assert result.returncode == 0, result.stderr
    return json.loads((run_dir / "summary.json").read_text()), read_jsonl(run_dir / "manifest.jsonl")


def test_stage_seconds_add_up_to_the_runs_cpu_time(corpus_run):
    summary, _ = corpus_run
    stages = summary["stages"]
    assert list(stages)[:2] == ["start", "read"] and {"prune", "summarize", "assemble", "score"} <= set(stages)
    total = sum(entry["seconds"] for entry in stages.values())
    assert abs(total - summary["process_cpu_seconds"]) <= 0.10 * summary["process_cpu_seconds"], (total, stages)


def test_each_stage_counts_in_its_row_and_the_run_adds_them_up(corpus_run):
    summary, rows = corpus_run
    compacted = [row for row in rows if row["status"] == "compacted"]
    assert compacted
    for row in compacted:     # the row's stats keep their columns; each stage's own are prefixed
        assert row["stats"].get("tool_outputs_pruned", 0) == row.get("prune.tool_outputs_pruned", 0)
        assert row["summarize.seconds"] >= 0 and row["plan.seconds"] >= 0
    pruned = sum(row.get("prune.tool_outputs_pruned", 0) for row in rows)
    assert pruned > 0 and summary["stages"]["prune"]["tool_outputs_pruned"] == pruned
    assert "summary_chatter_share" not in summary["stages"]["score"]     # a share per row is no total


def test_what_is_read_off_texts_is_remembered_per_conversation_only():
    import threading

    from hermes_pipeline.analysis.artifacts import call_arguments
    from hermes_pipeline.analysis.text_memo import TextMemo
    from hermes_pipeline.analysis.tool_output import error_lines
    call = {"function": {"name": "bash", "arguments": '{"command": "make"}'}}
    assert call_arguments(call) is not call_arguments(call)      # no memo: nothing kept between calls
    with TextMemo():
        assert call_arguments(call) is call_arguments(call)     # one parse for the conversation
    assert call_arguments(call) is not call_arguments(call)     # and gone with it
    seen = {}

    def conversation(name):
        with TextMemo() as own:
            error_lines(f"error: {name} failed")
            seen[name] = {args[0] for answers in own.answers.values() for args in answers}
    threads = [threading.Thread(target=conversation, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"a": {"error: a failed"}, "b": {"error: b failed"}}    # side by side, each its own
