"""Tiny builders for OpenAI-format messages in tests."""
import json


def system(text="You are a careful coding agent."):
    return {"role": "system", "content": text}


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


def calls(*specs, text=None):
    """An assistant message with tool calls; each spec is (id, name, arguments dict)."""
    return {"role": "assistant", "content": text, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for call_id, name, args in specs]}


def result(call_id, content):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def engine_for(context_length=4000, protect_last_n=4, pipeline="default", **overrides):
    """A real engine built from the real config tree, with small budgets for tests."""
    from hydra import compose, initialize_config_dir
    from hermes_pipeline.build import build
    from hermes_pipeline.cli import CONF_DIR
    args = ["input.path=samples", f"model.context_length={context_length}",
            f"compression.protect_last_n={protect_last_n}", f"pipeline={pipeline}",
            *[f"{k}={v}" for k, v in overrides.items()]]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=args)
    return build(cfg).engine


def long_log(error_line, lines=400):
    body = [f"tests/test_mod_{i}.py::test_case_{i} PASSED" for i in range(lines)]
    body.insert(lines // 2, error_line)
    return "\n".join(body)
