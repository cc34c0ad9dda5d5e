"""The replay cost model on a conversation worked out by hand, and its linear growth."""
import pytest

from hermes_pipeline.cost.replay import Prices, ReplaySettings, replay

PRICES = Prices(input=3.0, output=15.0, cache_write_5m=3.75, cache_write_1h=6.0, cache_read=0.30)
# role and token count of each message; the five assistant messages are the five requests
ROLES_COUNTS = [("system", 100), ("user", 200), ("assistant", 50), ("user", 700), ("assistant", 60),
                ("user", 250), ("assistant", 70), ("user", 300), ("assistant", 80), ("user", 100),
                ("assistant", 90)]
MESSAGES = [{"role": r, "content": f"message {i}"} for i, (r, _) in enumerate(ROLES_COUNTS)]
COUNTS = [c for _, c in ROLES_COUNTS]
# requests at 0 s, 60 s, 460 s (400 s later: a 5m cache has expired), 480 s, 500 s
TIMES = [None, None, 0, None, 60, None, 460, None, 480, None, 500]
SETTINGS = ReplaySettings(prices=PRICES, context_length=4000, threshold=0.5, target_ratio=0.2,
                          protect_first_n=3, protect_last_n=2, cache_ttl="5m", prefix_tokens=500,
                          min_cache_tokens=1024, summary_tokens=150, instruction_tokens=10, note_tokens=20)


def test_five_requests_worked_out_by_hand():
    """Threshold 2,000 tokens, tail budget 400; every figure below is worked out in the comments.

    A (t=0):   prompt 500+300 = 800; breakpoints 800 (user 1) and 600 (system) are under the
               1,024-token minimum: nothing cached, 800 uncached.
    B (t=60):  prompt 1,550; only the breakpoint at 1,550 is cacheable: write 1,550.
    C (t=460): 400 s since B: the 5m entries expired; prompt 1,860: write 1,860.
    D (t=480): prompt 2,230 >= 2,000: compact. Head = messages 0-2, tail from message 5 (the
               reply keeps its question), middle = messages 3-4 = 760 tokens -> summary 150,
               summary call 760+10 in, 150 out. The note (+20) changes the system prompt, so
               nothing cached survives: prompt 520+350+150+620 = 1,640, write 1,640.
    E (t=500): prompt 1,820; reads D's entry at 1,640, writes 180.
    """
    result = replay(MESSAGES, COUNTS, TIMES, SETTINGS, per_request=True)
    bill = result.configured
    assert [r[1:] for r in bill.per_request] == [
        (800, 0, 0), (0, 1550, 0), (0, 1860, 0), (0, 1640, 0), (0, 180, 1640)]
    assert (bill.requests, bill.uncached_tokens, bill.cache_write_tokens, bill.cache_read_tokens) == (5, 800, 5230, 1640)
    assert bill.output_tokens == 350
    assert (bill.compactions, bill.summary_calls, bill.summary_input_tokens, bill.summary_output_tokens) == (1, 1, 770, 150)
    # $: 800x3 + 5,230x3.75 + 1,640x0.3 + 350x15 + (770x3 + 150x15), per million
    assert bill.cost_usd == pytest.approx(32314.5 / 1e6)
    assert bill.cache_hit_rate == round(1640 / 7670, 4)


def test_the_same_conversation_without_compression_and_without_caching():
    result = replay(MESSAGES, COUNTS, TIMES, SETTINGS, per_request=True)
    plain = result.no_compression
    # D: prompt 2,230 reads C's 1,860 (20 s old), writes 370; E: 2,410 reads 2,230, writes 180
    assert [r[1:] for r in plain.per_request] == [
        (800, 0, 0), (0, 1550, 0), (0, 1860, 0), (0, 370, 1860), (0, 180, 2230)]
    assert plain.compactions == 0 and plain.summary_usd == 0
    assert plain.cost_usd == pytest.approx((800 * 3 + 3960 * 3.75 + 4090 * 0.3 + 350 * 15) / 1e6)
    uncached = result.no_caching
    assert (uncached.uncached_tokens, uncached.cache_write_tokens, uncached.cache_read_tokens) == (7670, 0, 0)
    assert uncached.compactions == 1
    row = result.to_dict()
    assert row["cost_usd_no_compression"] == round(plain.cost_usd, 6)
    assert row["cost_usd_no_caching"] == round(uncached.cost_usd, 6)


def test_a_one_hour_ttl_survives_the_400_second_gap_and_prices_writes_at_2x():
    from dataclasses import replace
    bill = replay(MESSAGES, COUNTS, TIMES, replace(SETTINGS, cache_ttl="1h"), per_request=True).configured
    assert bill.per_request[2][1:] == (0, 310, 1550)      # C reads B's entry instead of rewriting it
    assert bill.cache_write_usd == pytest.approx(bill.cache_write_tokens * 6.0 / 1e6)


def test_without_timestamps_requests_are_turn_gap_apart():
    from dataclasses import replace
    slow = replay(MESSAGES, COUNTS, None, replace(SETTINGS, turn_gap_s=301)).configured
    fast = replay(MESSAGES, COUNTS, None, replace(SETTINGS, turn_gap_s=30)).configured
    assert slow.cache_read_tokens == 0          # every gap is past the 5m TTL
    assert fast.cache_read_tokens > 0


class CountingList(list):
    """A list of counts that counts how often its items are read."""
    reads = 0

    def __iter__(self):
        for item in super().__iter__():
            CountingList.reads += 1
            yield item

    def __getitem__(self, index):
        CountingList.reads += 1
        return super().__getitem__(index)


def _session(turns: int):
    """A long agent session: a user asks, then tool calls and results, repeated."""
    messages, counts = [{"role": "system", "content": "s"}], [500]
    for t in range(turns):
        if t % 10 == 0:
            messages.append({"role": "user", "content": f"ask {t}"})
            counts.append(80)
        messages.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": f"c{t}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        counts.append(60)
        messages.append({"role": "tool", "tool_call_id": f"c{t}", "content": "x"})
        counts.append(900)
    return messages, counts


def test_replay_grows_linearly_and_reads_each_count_once():
    settings = ReplaySettings(prices=PRICES, context_length=32_000, protect_last_n=6)
    work = {}
    for turns in (400, 800):
        messages, counts = _session(turns)
        CountingList.reads = 0
        result = replay(messages, CountingList(counts), None, settings)
        assert CountingList.reads == len(messages)          # counts are read once, for the prefix sums
        assert result.configured.compactions > 10
        work[turns] = result.configured.work
    # messages looked at (the loop plus every live window handed to the boundary functions)
    assert work[800] <= 2.1 * work[400]


def test_settings_from_config_take_prices_ttl_and_the_summary_model(composed_config):
    from hermes_pipeline.components import replay_settings_from_config as settings_from_config
    config = composed_config("prompt_caching.cache_ttl=1h", "auxiliary.compression.model=claude-haiku-4-5")
    settings = settings_from_config(config)
    assert settings.prices.cache_write_1h == 6.0 and settings.cache_ttl == "1h" and settings.caching
    assert settings.summary_prices.input == 1.0 and settings.summary_prices.output == 5.0   # Haiku's
    assert settings.token_scale == 1.2 and settings.min_cache_tokens == 1024
    assert settings.instruction_tokens > 300 and 0 < settings.note_tokens < 60
    assert settings_from_config(composed_config("model=gpt-4o")).caching is False    # not a Claude model
    assert settings_from_config(composed_config("replay.enabled=false")) is None
    # the replay bills summaries: a chain without one (observation masking) gets no bill, not a summary's
    assert settings_from_config(composed_config("pipeline=mask_only")) is None


@pytest.mark.parametrize("override", ["replay.turn_gap_s=-1", "replay.prefix_tokens=-5", "replay.enabled=maybe",
                                      "replay.summary_tokens=1.5"])
def test_replay_settings_out_of_range_are_config_errors(override, composed_config):
    from hydra.errors import ConfigCompositionException

    from hermes_pipeline.config import ConfigError, validate
    # a wrong type fails when Hydra composes (the schema is typed); a bad range when validated
    with pytest.raises((ConfigError, ConfigCompositionException), match=override.split("=")[0]):
        validate(composed_config(override))
