import pytest

from hermes_pipeline.components import budgets_from_config
from hermes_pipeline.stages.plan import compute_budgets


def test_worked_example_for_a_200k_model_with_defaults(composed_config):
    cfg = composed_config()
    budgets = budgets_from_config(cfg)
    assert cfg.model.context_length == 200_000
    assert budgets.threshold_tokens == 100_000
    assert budgets.tail_token_budget == 20_000
    assert budgets.max_summary_tokens == 10_000
    assert budgets.hygiene_tokens == 170_000


def test_context_length_override_changes_every_budget(composed_config):
    cfg = composed_config("model.context_length=1000000")
    budgets = budgets_from_config(cfg)
    assert budgets.threshold_tokens == 500_000
    assert budgets.tail_token_budget == 100_000
    assert budgets.max_summary_tokens == 12_000   # the hard ceiling


@pytest.mark.parametrize("content_tokens, expected", [(1_000, 2_000), (30_000, 6_000), (80_000, 10_000), (500_000, 10_000)])
def test_summary_budget_is_a_fifth_of_the_content_within_floor_and_ceiling(content_tokens, expected):
    assert compute_budgets(200_000, 0.5, 0.2, 0.85).summary_tokens(content_tokens) == expected


def test_the_floor_wins_over_a_small_context_s_share_as_in_hermes():
    # Hermes: max(2,000, min(content / 5, 5% of the context, ceiling)); 5% of 32K is 1,600
    assert compute_budgets(32_000, 0.5, 0.2, 0.85).summary_tokens(50_000) == 2_000
    assert compute_budgets(32_000, 0.5, 0.2, 0.85).summary_tokens(1_000) == 2_000


@pytest.mark.parametrize("context, expected", [(4_000, 400), (12_000, 1_200), (16_000, 1_600)])
def test_below_that_the_floor_is_a_tenth_of_the_context(context, expected):
    budgets = compute_budgets(context, 0.5, 0.2, 0.85)
    assert budgets.summary_tokens(50_000) == expected     # 5% of the context would be half that
    assert budgets.summary_tokens(500) == expected
    assert budgets.tail_token_budget == expected          # at the defaults the tail's budget: never larger than it
    # a larger tail or threshold leaves it as it is
    assert compute_budgets(context, 0.7, 0.3, 0.85).summary_tokens(50_000) == expected


def test_a_ceiling_below_the_floor_caps_it():
    budgets = compute_budgets(200_000, 0.5, 0.2, 0.85, summary_ceiling=500)
    assert budgets.summary_tokens(1_000) == 500 and budgets.summary_tokens(500_000) == 500


def test_the_summary_share_of_the_context_and_the_ceiling_are_settings(composed_config):
    assert budgets_from_config(composed_config("model.context_length=32000")).max_summary_tokens == 1_600
    wider = budgets_from_config(composed_config("model.context_length=32000", "compression.summary_context_share=0.1"))
    assert wider.max_summary_tokens == 3_200 and wider.summary_tokens(50_000) == 3_200
    assert budgets_from_config(composed_config("model.context_length=64000")).summary_tokens(50_000) == 3_200
    capped = budgets_from_config(composed_config("compression.summary_ceiling=4000"))
    assert capped.max_summary_tokens == 4_000     # 5% of 200K would be 10,000
