"""Generators of realistic archives that are not in the repository.

Each writer puts files in a folder and returns, per file, how many of its lines
must end up in the quarantine (broken lines, comment lines); everything else must
be read. The shapes follow the real tools:
- Claude Code session logs of several versions: 1.0.x (sub-agent lines inside the
  main log), 2.x (parallel tool results beside the chain, sub-agent logs in their own
  `agent-*.jsonl` files); base64 images in user messages and tool results, lines of
  several MB, `toolUseResult` duplicates, comment lines and a line cut by a crash;
- ShareGPT trajectories written by a Hermes-based app (`<tools>` system prompt,
  `<think>`, `<tool_call>` / `<tool_response>` JSON);
- an Anthropic export with one message per line (API responses with usage);
- pi coding agent session logs (header, entry tree, branches, a compaction,
  `!` bash runs, failed turns) with broken lines.
Everything is generated from a seed, so a failing run can be reproduced.
"""
from __future__ import annotations

import base64
import json
import random
import uuid
from pathlib import Path

PNG = base64.b64encode(bytes(range(256)) * 24).decode()     # stands in for a screenshot


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def _write(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        for item in lines:
            handle.write((item if isinstance(item, str) else json.dumps(item)) + "\n")
    return path


def _cut(value: dict) -> str:
    """A line as a crash leaves it: the first part of the JSON only."""
    text = json.dumps(value)
    return text[: max(10, len(text) // 3)]


def _log_text(rng: random.Random, lines: int, error: str | None = None) -> str:
    body = [f"[{i:05d}] worker-{rng.randint(1, 8)} processed batch {rng.randint(1000, 9999)} in "
            f"{rng.random():.3f}s" for i in range(lines)]
    if error:
        body.insert(lines // 2, error)
    return "\n".join(body)


# -- Claude Code -------------------------------------------------------------------------------

class ClaudeCodeLog:
    """Events of one Claude Code session, linked by parentUuid like the real logs."""

    def __init__(self, rng: random.Random, version: str, session: str | None = None, sidechain: bool = False,
                 agent_id: str | None = None):
        self.rng, self.version, self.sidechain, self.agent_id = rng, version, sidechain, agent_id
        self.session = session or _uuid(rng)
        self.lines: list = []
        self.parent: str | None = None
        self.bad = 0

    def _event(self, kind: str, message: dict, parent: str | None = None, **extra) -> dict:
        event = {"parentUuid": self.parent if parent is None else parent, "isSidechain": self.sidechain,
                 "userType": "external", "cwd": "/home/dev/shop", "sessionId": self.session,
                 "version": self.version, "gitBranch": "main", "type": kind, "message": message,
                 "uuid": _uuid(self.rng), "timestamp": f"2025-0{self.rng.randint(1, 9)}-1{self.rng.randint(0, 9)}T10:00:00Z"}
        if self.agent_id:
            event["agentId"] = self.agent_id
        event.update(extra)
        self.lines.append(event)
        self.parent = event["uuid"]
        return event

    def user(self, content) -> None:
        self._event("user", {"role": "user", "content": content})

    def response(self, blocks: list[dict]) -> list[dict]:
        """One model response written one content block per line, sharing message.id."""
        message_id = f"msg_{self.rng.getrandbits(64):016x}"
        events = []
        for block in blocks:
            events.append(self._event("assistant", {
                "id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
                "content": [block], "stop_reason": None,
                "usage": {"input_tokens": self.rng.randint(3, 9), "cache_creation_input_tokens": self.rng.randint(0, 900),
                          "cache_read_input_tokens": self.rng.randint(1000, 40000), "output_tokens": self.rng.randint(5, 400)}},
                requestId=f"req_{self.rng.getrandbits(48):012x}"))
        return events

    def results(self, results: list[tuple[str, object]], parallel: bool = False) -> None:
        """Tool results; in 2.x each parallel result is a line of its own hanging off the call line."""
        if not parallel:
            self._event("user", {"role": "user", "content": [
                {"tool_use_id": i, "type": "tool_result", "content": c} for i, c in results]},
                toolUseResult={"stdout": str(results[0][1])[:2000], "stderr": "", "interrupted": False})
            return
        anchor = self.parent
        for call_id, content in results:
            self._event("user", {"role": "user", "content": [
                {"tool_use_id": call_id, "type": "tool_result", "content": content}]}, parent=anchor,
                toolUseResult={"stdout": str(content)[:2000], "stderr": ""})

    def broken(self) -> None:
        """The last line, cut by a crash: what it said is lost, the next lines name a parent that is gone."""
        self.lines[-1] = _cut(self.lines[-1])
        self.bad += 1

    def comment(self, text: str) -> None:
        self.lines.append(f"# {text}")
        self.bad += 1


def _tool_id(rng: random.Random) -> str:
    return f"toolu_01{rng.getrandbits(80):020x}"


def _claude_work(log: ClaudeCodeLog, steps: int, parallel: bool, huge_at: int | None = None,
                 huge_bytes: int = 3 << 20) -> None:
    rng = log.rng
    for step in range(steps):
        calls = [{"type": "tool_use", "id": _tool_id(rng), "name": name, "input": args}
                 for name, args in [("Bash", {"command": f"npm test -- --shard={step}"}),
                                    ("Read", {"file_path": f"/home/dev/shop/src/cart/item{step}.ts"})][: 1 + step % 2]]
        log.response([{"type": "text", "text": f"Step {step}: running the shard and reading the cart code."}, *calls])
        outputs = []
        for call in calls:
            if step == huge_at and call["name"] == "Bash":
                outputs.append(_log_text(rng, huge_bytes // 60, "Error: ECONNRESET while fetching prices"))
            elif call["name"] == "Read" and step % 5 == 1:
                outputs.append([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}])
            else:
                outputs.append(_log_text(rng, rng.randint(5, 60)))
        log.results([(c["id"], o) for c, o in zip(calls, outputs)], parallel=parallel and len(calls) > 1)
        if step % 4 == 3:
            log.user(f"Looks good so far. Keep the price rounding at {step} decimals? No, keep 2.")


def claude_code_v1(folder: Path, rng: random.Random) -> dict[Path, int]:
    """Claude Code 1.0.x: title line, sub-agent (Task) lines mixed in, an image, a 3 MB tool output."""
    log = ClaudeCodeLog(rng, "1.0.98")
    log.lines.append({"type": "summary", "summary": "Fix cart rounding", "leafUuid": _uuid(rng)})
    log.comment("exported with cc-export 0.3")
    log.user([{"type": "text", "text": "The cart total is off by a cent, screenshot attached. Fix it."},
              {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}])
    _claude_work(log, 6, parallel=False, huge_at=2)
    task = _tool_id(rng)
    log.response([{"type": "tool_use", "id": task, "name": "Task", "input": {"prompt": "Find rounding code"}}])
    anchor = log.parent
    side = ClaudeCodeLog(rng, "1.0.98", session=log.session, sidechain=True)
    side.parent = anchor
    side.user("Find rounding code")
    _claude_work(side, 2, parallel=False)
    log.lines += side.lines
    log.parent = anchor
    log.results([(task, "Rounding happens in src/cart/total.ts:42 (Math.round on floats).")])
    log.broken()                                  # a line cut in the middle of the log
    _claude_work(log, 10, parallel=False)
    log.response([{"type": "text", "text": "Fixed: totals are computed in integer cents now."}])
    return {_write(folder / "claude-1.0" / f"{log.session}.jsonl", log.lines): log.bad}


def claude_code_v2(folder: Path, rng: random.Random) -> dict[Path, int]:
    """Claude Code 2.x: parallel tool results, a 5 MB line, a sub-agent log file, a crash at the end."""
    log = ClaudeCodeLog(rng, "2.0.37")
    log.lines.append({"type": "file-history-snapshot", "messageId": _uuid(rng), "snapshot": {"trackedFileBackups": {}},
                      "isSnapshotUpdate": False})
    log.user("Port the price service to the new API client and keep the tests green.")
    _claude_work(log, 14, parallel=True, huge_at=5, huge_bytes=5 << 20)
    log.response([{"type": "text", "text": "Ported; all 214 tests pass."}])
    log.broken()                                  # the session was killed while writing
    files = {_write(folder / "claude-2.x" / f"{log.session}.jsonl", log.lines): log.bad}
    agent = ClaudeCodeLog(rng, "2.0.37", session=log.session, sidechain=True, agent_id="a1b2c3d4")
    agent.user("Search the repo for uses of the old client.")
    _claude_work(agent, 3, parallel=True)
    agent.response([{"type": "text", "text": "Found 7 uses, listed above."}])
    files[_write(folder / "claude-2.x" / "agent-a1b2c3d4.jsonl", agent.lines)] = agent.bad
    return files


# -- ShareGPT (a Hermes-based app) ---------------------------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "web_search", "description": "Search the web",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "terminal", "description": "Run a shell command",
                                           "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]


def _trajectory(rng: random.Random, n: int, steps: int, unanswered: bool = False, bad_call: bool = False) -> dict:
    system = ("You are a function calling AI model. You are provided with function signatures within <tools></tools> "
              f"XML tags.\n<tools>\n{json.dumps(TOOLS)}\n</tools>\nFor each function call return a json object within "
              "<tool_call></tool_call> XML tags.")
    turns = [{"from": "system", "value": system},
             {"from": "human", "value": f"Research task {n}: compare the latency of three CDNs and benchmark locally."}]
    for step in range(steps):
        calls = [{"name": "web_search", "arguments": {"query": f"cdn latency {step}"}}]
        if step % 3 == 2:
            calls.append({"name": "terminal", "arguments": {"command": f"curl -w '%{{time_total}}' cdn{step}.example"}})
        think = f"<think>\nStep {step}: I need more data.\n</think>\n"
        body = "\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in calls)
        if bad_call and step == 1:
            body = "<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \n</tool_call>"   # unparsable: text
            turns.append({"from": "gpt", "value": think + body})
            turns.append({"from": "human", "value": "Your tool call was malformed, try again."})
            continue
        turns.append({"from": "gpt", "value": think + body})
        responses = [json.dumps({"name": c["name"], "content": _log_text(rng, rng.randint(3, 25))}) for c in calls]
        turns.append({"from": "tool", "value": "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in responses)})
    if unanswered:
        turns.append({"from": "gpt", "value": "<tool_call>\n{\"name\": \"terminal\", \"arguments\": {\"command\": "
                                              "\"ab -n 100 http://localhost/\"}}\n</tool_call>"})
    else:
        turns.append({"from": "gpt", "value": f"CDN {rng.choice('ABC')} is fastest (median 23 ms)."})
    return {"id": f"traj-{n:04d}", "conversations": turns, "tools": json.dumps(TOOLS), "model": "Hermes-3-Llama-3.1-8B",
            "source": "hermes-agent-app", "completed": not unanswered}


def sharegpt_app(folder: Path, rng: random.Random) -> dict[Path, int]:
    lines: list = []
    for n in range(24):
        lines.append(_trajectory(rng, n, rng.randint(2, 14), unanswered=n == 5, bad_call=n == 7))
    lines.insert(9, _cut(_trajectory(rng, 99, 3)))
    return {_write(folder / "sharegpt" / "trajectories-2026-01.jsonl", lines): 1}


# -- Anthropic, one message per line ---------------------------------------------------------------

def anthropic_export(folder: Path, rng: random.Random) -> dict[Path, int]:
    lines: list = ["// conversation export: one Anthropic message per line",
                   {"role": "user", "content": "Audit the nginx config in this repo for security problems."}]
    for step in range(26):
        call = {"type": "tool_use", "id": _tool_id(rng), "name": "read_file", "input": {"path": f"nginx/site{step}.conf"}}
        lines.append({"id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                      "model": "claude-3-5-sonnet-20241022",
                      "content": [{"type": "text", "text": f"Checking site{step}.conf."}, call],
                      "stop_reason": "tool_use", "stop_sequence": None,
                      "usage": {"input_tokens": 1200 + 150 * step, "output_tokens": rng.randint(30, 90)}})
        result = {"type": "tool_result", "tool_use_id": call["id"],
                  "content": [{"type": "text", "text": "server {\n  listen 80;\n" + "  location / { }\n" * 40 + "}"}]}
        if step % 7 == 3:
            result["is_error"] = True
        lines.append({"role": "user", "content": [result]})
        if step % 6 == 5:
            lines.append({"role": "user", "content": "Also flag missing HSTS headers."} if step != 11 else
                         _cut({"role": "user", "content": "Also flag missing HSTS headers and weak ciphers."}))
            lines.append({"id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                          "content": [{"type": "text", "text": "Noted, I'll flag those too."}],
                          "stop_reason": "end_turn", "usage": {"input_tokens": 900, "output_tokens": 12}})
    lines.append({"role": "assistant", "content": [{"type": "text", "text": "Audit done: 3 sites lack HSTS."}]})
    return {_write(folder / "anthropic" / "nginx-audit.jsonl", lines): 2}


# -- pi coding agent ---------------------------------------------------------------------------

class PiLog:
    def __init__(self, rng: random.Random, version: int = 3):
        self.rng, self.version = rng, version
        self.lines: list = [{"type": "session", "id": _uuid(rng), "timestamp": "2026-01-05T08:00:00.000Z",
                             "cwd": "/home/dev/weather"}]
        if version >= 2:
            self.lines[0]["version"] = version
        self.parent: str | None = None
        self.bad = 0

    def entry(self, kind: str, parent: str | None = None, **fields) -> dict:
        entry = {"type": kind, "timestamp": "2026-01-05T08:00:01.000Z", **fields}
        if self.version >= 2:
            entry = {"type": kind, "id": f"{self.rng.getrandbits(32):08x}",
                     "parentId": self.parent if parent is None else parent, **entry}
            self.parent = entry["id"]
        self.lines.append(entry)
        return entry

    def message(self, role: str, content=None, **extra) -> dict:
        message = {"role": role, "content": content, "timestamp": 1767600000000, **extra}
        if content is None:
            del message["content"]
        return self.entry("message", message=message)

    def assistant(self, content: list, stop: str = "toolUse", **extra) -> dict:
        return self.message("assistant", content, api="anthropic-messages", provider="anthropic",
                            model="claude-sonnet-4-5", stopReason=stop, **extra,
                            usage={"input": 40, "output": 120, "cacheRead": 3000 + len(self.lines) * 50, "cacheWrite": 90,
                                   "totalTokens": 3250 + len(self.lines) * 50})

    def broken(self, value: dict) -> None:
        """A line cut by a crash; the entries after it name it as their parent."""
        self.lines.append(_cut(value))
        self.bad += 1
        if "id" in value:
            self.parent = value["id"]


def _pi_steps(log: PiLog, steps: int, start: int = 0) -> None:
    rng = log.rng
    for step in range(start, start + steps):
        calls = [{"type": "toolCall", "id": f"toolu_{rng.getrandbits(40):010x}", "name": "bash",
                  "arguments": {"command": f"pytest -q tests/test_{step}.py"}}]
        if step % 3 == 0:
            calls.append({"type": "toolCall", "id": f"toolu_{rng.getrandbits(40):010x}", "name": "read",
                          "arguments": {"path": f"src/weather/mod{step}.py"}})
        log.assistant([{"type": "thinking", "thinking": f"Step {step}.", "thinkingSignature": "sig"},
                       {"type": "text", "text": f"Running step {step}."}, *calls])
        for call in calls:
            content = [{"type": "text", "text": _log_text(rng, rng.randint(5, 40))}]
            if call["name"] == "read" and step % 6 == 3:
                content.append({"type": "image", "data": PNG[:4000], "mimeType": "image/png"})
            log.message("toolResult", content, toolCallId=call["id"], toolName=call["name"], isError=step % 7 == 6)
        if step % 5 == 4:
            log.message("bashExecution", command="git status --short", output=" M src/weather/cli.py",
                        exitCode=0, cancelled=False, truncated=False)
            log.message("user", f"Fine. Continue with step {step + 1}, keep the API stable.")


def pi_sessions(folder: Path, rng: random.Random) -> dict[Path, int]:
    files = {}
    # a v3 session with a branch, a compaction, a failed turn and broken lines
    log = PiLog(rng)
    log.entry("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    log.message("user", [{"type": "text", "text": "The CLI crashes for cities with spaces; fix it and add tests."},
                         {"type": "image", "data": PNG[:8000], "mimeType": "image/png"}])
    _pi_steps(log, 6)
    branch_point = log.parent
    log.assistant([{"type": "text", "text": "I'll rewrite the parser from scratch."}], stop="stop")
    log.parent = branch_point                     # the user went back with /tree
    log.entry("branch_summary", fromId=log.lines[-1]["id"], summary="Tried rewriting the parser; abandoned.")
    log.message("user", "Smaller change please: just join the arguments.")
    _pi_steps(log, 5, start=6)
    kept = log.message("user", "Keep going.")["id"]       # pi cuts at a user turn, never at a tool result
    log.entry("compaction", summary="## Goal\nFix cities with spaces.\n## Progress\n### Done\n- Steps 0-10",
              firstKeptEntryId=kept, tokensBefore=88000)
    log.assistant([], stop="error", errorMessage="overloaded_error")
    log.message("user", "retry")
    _pi_steps(log, 4, start=11)
    log.broken({"type": "message", "id": "deadbeef", "parentId": log.parent,
                "message": {"role": "user", "content": "this line was cut"}})
    _pi_steps(log, 4, start=15)
    log.assistant([{"type": "text", "text": "All 19 steps pass."}], stop="stop")
    log.entry("label", targetId=kept, label="before-compaction")
    log.broken({"type": "session_info", "id": "cafebabe", "parentId": log.parent, "name": "Fix spaces"})
    files[_write(folder / "pi" / "--home-dev-weather--" / f"2026-01-05T08-00-00-000Z_{log.lines[0]['id']}.jsonl",
                 log.lines)] = log.bad
    # a version 1 session (no ids: a linear log) with a broken line
    old = PiLog(rng, version=1)
    old.message("user", "Add a --units flag.")
    _pi_steps(old, 8)
    old.broken({"type": "message", "message": {"role": "user", "content": "lost"}})
    old.assistant([{"type": "text", "text": "Added --units (metric|imperial)."}], stop="stop")
    files[_write(folder / "pi" / "--home-dev-weather--" / f"2025-11-20T10-00-00-000Z_{old.lines[0]['id']}.jsonl",
                 old.lines)] = old.bad
    return files


def write_archive(folder: Path, seed: int = 7) -> dict[Path, int]:
    """Every generator into one folder; {file: lines that must be quarantined}."""
    rng = random.Random(seed)
    files: dict[Path, int] = {}
    for writer in (claude_code_v1, claude_code_v2, sharegpt_app, anthropic_export, pi_sessions):
        files.update(writer(folder, rng))
    return files
