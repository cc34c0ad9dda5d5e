"""Deaths on cue, a seam of the product for its resume tests: `HERMES_FAULT=<point>:<n>` kills the
process with SIGKILL the n-th time the run loop passes <point> (a real kill -9, at a chosen moment).

Points: `file` (a file is about to be read), `committed` (a conversation is in the state
store, not yet in the manifest), `listed` (in the manifest, not yet in its output file),
`batch_poll` (a batch run is about to look at its batches).
Unset (always, outside the tests) it costs one environment lookup per call. It is read at each call, not
at import: a run forked from a process that imported this module long before (the tests' warm command
line) still gets its own.
"""
from __future__ import annotations

import os
import signal
from collections import Counter

_passed: Counter = Counter()


def fault_point(point: str) -> None:
    spec = os.environ.get("HERMES_FAULT")
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if point != name:
        return
    _passed[point] += 1
    if _passed[point] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
