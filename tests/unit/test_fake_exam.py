"""The fake provider's exam model (hermes_pipeline/testing/fake_exam.py) must answer its own questions from
the uncompacted conversation: the exam tests' ceiling (the `full` baseline scores 5) rests on it."""
from __future__ import annotations

import json

from hermes_pipeline.testing.fake_exam import answers, questions

CONVERSATION = ("Ran the tests in `tests/test_math_utils.py`. ASSISTANT: they pass now. Then I edited "
                "src/app_main.py (the `parse_args()` call) and set PORT=8731, see \"docs/setup.md\".")


def test_the_fake_answers_every_one_of_its_questions_from_the_whole_conversation():
    asked = json.loads(questions("Write 6 questions", f"<kept-before></kept-before><removed>{CONVERSATION}"
                                                      "</removed><kept-after></kept-after>"))["questions"]
    assert len(asked) == 6 and any(q["question"].startswith("Which word follows `tests/test_math_utils.py`")
                                   for q in asked)
    listed = "\n".join(q["question"] for q in asked)
    replied = json.loads(answers(f"<context>{CONVERSATION}</context>\n<questions>{listed}</questions>"))["answers"]
    assert replied == [q["answer"] for q in asked]
