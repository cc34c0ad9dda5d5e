"""One fallback (summarizers/fallback.py): the embedded summarizer stands in for one that fails, and says why."""
import pytest

from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.fallback import WithFallback, with_fallback
from hermes_pipeline.transcript import Conversation, message_text
from testkit.builders import assistant, engine_for, system, user


class Failing(Summarizer):
    """A summarizer whose endpoint is down."""

    def __init__(self, name="failing", model_cfg=None, aux_cfg=None):
        self.name = name

    def summarize(self, request):
        raise RuntimeError("endpoint on fire")


class Thinking(Summarizer):
    """A summarizer that only thinks aloud: nothing of a summary, but tokens spent."""

    def __init__(self, name="thinking", model_cfg=None, aux_cfg=None):
        self.name = name

    def summarize(self, request):
        return SummaryResult(text="<think>where was I</think>", summarizer=self.name, usage={"output_tokens": 9},
                             calls=2, retries=1)


class Refused(Summarizer):
    def summarize(self, request):
        raise SummarizerFatalError("401: check the key")


def middle(n=8):
    return [m for i in range(n) for m in (user(f"step {i}: rename parse_{i} in src/p{i}.py " + "go on " * 80),
                                           assistant(f"renamed parse_{i} " + "done " * 100))]


def request():
    return SummaryRequest("c", middle(), budget_tokens=500, context_length=4000, head=[user("Port the parser.")])


def test_a_failing_summarizer_is_stood_in_for_and_the_row_says_why():
    result = WithFallback(Failing()).summarize(request())
    assert result.summarizer == "extractive" and result.via == "fallback" and "## Goal" in result.text
    assert result.fallback == "RuntimeError: endpoint on fire" and result.calls == 0


def test_an_empty_summary_is_stood_in_for_and_what_it_cost_is_kept():
    result = WithFallback(Thinking()).summarize(request())
    assert result.summarizer == "extractive" and result.fallback == "thinking returned an empty summary"
    assert (result.usage, result.calls, result.retries) == ({"output_tokens": 9}, 2, 1)


def test_a_refused_key_stops_the_run_instead():
    with pytest.raises(SummarizerFatalError):
        WithFallback(Refused()).summarize(request())


def test_a_summarizer_that_falls_back_is_wrapped_once():
    wrapped = WithFallback(Failing())
    assert with_fallback(wrapped) is wrapped and with_fallback(Failing()).primary.name == "failing"


@pytest.mark.parametrize("engine", ["compressor", "lcm"])
def test_the_summarize_stage_and_lcm_fall_back_alike(engine, tmp_path):
    built = engine_for(context_length=4000, protect_last_n=4, engine=engine, **{
        "summarizer._target_": f"{__name__}.Failing", "lcm.store": str(tmp_path / "lcm.sqlite")})
    messages = [system("s"), user("Port the parser."), assistant("On it."), *middle()]
    compaction = built.compress(Conversation("c", messages, source="t:1", format="openai"))
    built.close()
    summary = compaction.outcome.summary
    assert compaction.outcome.compacted and summary.summarizer == "extractive"
    assert summary.fallback == "RuntimeError: endpoint on fire"
    written = "\n".join(message_text(m) for m in compaction.messages)
    assert "parse_" in written and ("Stored originals: lcm:" in written) is (engine == "lcm")
