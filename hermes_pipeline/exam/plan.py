"""What a run's exam is asked to do (exam.*): read by components.py, done by run/exam_pass.py."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExamPlan:
    """exam.*, and how the run's output is read back."""
    sample: int
    questions: int
    baselines: tuple[str, ...]
    input_format: str
    output_format: str
