"""The exam: compaction quality judged by a model, the way the field measures it.

Questions a resuming engineer must answer are written from the conversation as it was read
(questions.md), answered by a separate request that sees only what compaction left (answers.md: "not in
context" when it is not there), and graded 0-5 against the reference answers (grades.md). Optionally the
same questions are answered from baselines (head + tail with no summary, the whole uncompacted
conversation), so a user sees what the summary adds. The requests go the way summaries go (retries,
breaker, request cache, batches, files): run/exam_pass.py runs it after a run, on a sample.
"""
