"""Shared fixtures; data paths and the CLI runner live in tests/helpers/env.py."""
from pathlib import Path

import pytest

from tests.helpers.env import CORPUS, shared


@pytest.fixture
def corpus() -> Path:
    """The whole shared corpus (skips with a reason when it is absent)."""
    return shared(CORPUS)
