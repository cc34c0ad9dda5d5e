"""The default pipeline writes exactly the golden bytes (testkit/golden.py says how to update them)."""
import json

import pytest

from testkit.env import shared
from testkit.golden import CASES, GOLDEN, case_input, digests

KNOWN = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_are_byte_identical_to_the_golden_run(tmp_path, name):
    source = case_input(name, tmp_path)
    if source is None:
        shared(CASES[name][0])
    assert digests(name, tmp_path) == KNOWN[name]
