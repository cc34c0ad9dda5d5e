"""Test doubles that ship with the package (for tests, benchmarks and dry runs; the product never imports
them): fake HTTP APIs, each a set of routes on the one loopback server of http_server.py.

fake_provider   the Anthropic Messages and OpenAI Chat Completions APIs the summarizers call, with their
                batch APIs (fake_batches) and scripted faults (fake_faults); `python -m` serves it
fake_agent_api  the Anthropic Messages API the real Claude Code and pi resume against, refusing what the
                real API refuses
fake_responses  the OpenAI Responses API the real Codex CLI runs against, scripted like a coding model
fake_weather    a busy provider in front of another: 529/429/500 and "prompt is too long" on its own count
"""
