"""Shared fixtures; data paths and the CLI runner live in testkit/env.py."""
from pathlib import Path

import pytest

from testkit.builders import compose_config
from testkit.env import CORPUS, shared


@pytest.fixture
def corpus() -> Path:
    """The whole shared corpus (skips with a reason when it is absent)."""
    return shared(CORPUS)


@pytest.fixture
def composed_config():
    """compose(*overrides): the run config as the command line composes it, reading the bundled samples
    unless an override names another input. The one way tests get a composed config."""
    def compose(*overrides: str):
        return compose_config("input.path=samples", *overrides)
    return compose
