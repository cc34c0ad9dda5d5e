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


def compose_config(*overrides):
    """The composed run config, as the command line would see it."""
    from hydra import compose, initialize_config_dir

    from hermes_pipeline.config.files import config_dir
    from hermes_pipeline.config.schema import register
    register()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def engine_for(context_length=4000, protect_last_n=4, pipeline="default", **overrides):
    """A real engine built from the real config tree, with small budgets for tests."""
    from hermes_pipeline.components import build
    return build(compose_config("input.path=samples", f"model.context_length={context_length}",
                                f"compression.protect_last_n={protect_last_n}", f"pipeline={pipeline}",
                                *[f"{k}={v}" for k, v in overrides.items()])).engine


def run_in_process(engine, run_dir, source, **options):
    """A whole run of the executor in this process, on one thread, with the given engine."""
    from hermes_pipeline.inputs.find import resolve_inputs
    from hermes_pipeline.run.executor import Executor, RunOptions
    from hermes_pipeline.run.output_tree import OutputTree
    from hermes_pipeline.run.run_folder import RunFolder
    from hermes_pipeline.run.runners.local import LocalRunner
    runner = LocalRunner()
    runner.start(engine, None, auto_concurrency=1)
    executor = Executor(runner, RunFolder(run_dir), OutputTree.in_run_folder(run_dir),
                        RunOptions(progress="none", **options))
    return executor.run(resolve_inputs(str(source)))


def long_log(error_line, lines=400):
    body = [f"tests/test_mod_{i}.py::test_case_{i} PASSED" for i in range(lines)]
    body.insert(lines // 2, error_line)
    return "\n".join(body)
