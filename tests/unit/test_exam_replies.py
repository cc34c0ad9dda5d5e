"""The exam's replies: read when in the shape asked for, refused saying why otherwise."""
import json

import pytest

from hermes_pipeline.exam.contexts import context
from hermes_pipeline.exam.examiner import Case, Result
from hermes_pipeline.exam.replies import ExamReplyError, Grade, Question, read_answers, read_grades, read_questions
from hermes_pipeline.transcript import SUMMARY_END, SUMMARY_PREFIX

QUESTIONS = {"questions": [{"kind": "recall", "question": "Which port?", "answer": "8765"},
                           {"kind": "Decision", "question": "Why not sqlite?", "answer": "locks"}]}


def test_questions_are_read_from_a_fenced_or_chatty_reply():
    text = "Here is the exam:\n```json\n" + json.dumps(QUESTIONS) + "\n```"
    assert read_questions(text, 2) == [Question("recall", "Which port?", "8765"),
                                       Question("decision", "Why not sqlite?", "locks")]
    assert len(read_questions(json.dumps({"questions": QUESTIONS["questions"] * 3}), 4)) == 4   # cut to 4


@pytest.mark.parametrize("reply, why", [
    ("no json at all", "no JSON object"),
    ('{"questions": []}', 'no "questions" list'),
    ('{"questions": [{"kind": "trivia", "question": "q", "answer": "a"}]}', "kind 'trivia'"),
    ('{"questions": [{"kind": "recall", "question": "", "answer": "a"}]}', "needs a question"),
    (json.dumps(QUESTIONS), "2 question(s), 6 asked for"),
])
def test_questions_in_another_shape_are_refused(reply, why):
    with pytest.raises(ExamReplyError, match=__import__("re").escape(why)):
        read_questions(reply, 6)


@pytest.mark.parametrize("grades, why", [([7], "7"), ([2.5], "2.5"), ([True], "True"), (["5"], "'5'")])
def test_a_grade_outside_0_to_5_or_not_whole_is_refused(grades, why):
    with pytest.raises(ExamReplyError, match="not a whole number from 0 to 5"):
        read_grades(json.dumps({"grades": [{"grade": g} for g in grades]}), 1)


def test_answers_and_grades_must_match_the_questions_in_number():
    assert read_answers('{"answers": ["8765", "not in context"]}', 2) == ["8765", "not in context"]
    with pytest.raises(ExamReplyError, match="1 answer"):
        read_answers('{"answers": ["8765"]}', 2)
    assert read_grades('{"grades": [{"grade": 5, "note": "ok"}, 0]}', 2) == [Grade(5, "ok"), Grade(0)]


def test_a_result_scores_each_condition_and_kind():
    result = Result(Case("c", "f:1", [], []), questions=[Question("recall", "q1", "a"), Question("recall", "q2", "b"),
                                                        Question("decision", "q3", "c")])
    result.grades = {"compacted": [Grade(5), Grade(2), Grade(0)], "full": [Grade(5), Grade(5), Grade(5)]}
    assert result.score() == 2.333 and result.score("full") == 5.0
    assert result.per_kind() == {"recall": 3.5, "decision": 0.0}
    assert result.to_row()["baselines"] == {"full": {"score": 5.0, "per_kind": {"recall": 5.0, "decision": 5.0}}}


def test_head_and_tail_is_the_compacted_conversation_without_its_summary():
    summary = {"role": "user", "content": f"{SUMMARY_PREFIX} note\n## Goal\n- x\n{SUMMARY_END}"}
    merged = {"role": "assistant", "content": f"{SUMMARY_PREFIX} note\n## Goal\n- y\n{SUMMARY_END}\n\nThe reply."}
    head, tail = {"role": "user", "content": "go"}, {"role": "assistant", "content": "done"}
    assert context("head_tail", [], [head, summary, tail]) == [head, tail]
    assert context("head_tail", [], [head, merged]) == [head, {"role": "assistant", "content": "The reply."}]
    assert [m["content"] for m in context("summary", [], [head, merged])] == [merged["content"][:-len("\n\nThe reply.")]]
