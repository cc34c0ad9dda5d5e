"""Plugin context engines, resolved by the real command line.

Each test writes a plugin the way a user would (a folder under
plugins/context_engine/, or an installed package with an entry point) in a
temporary working directory and runs the real CLI there.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.plugins import check_name
from testkit.env import ROOT, read_jsonl, run_cli
from testkit.validity import problems

SAMPLE = ROOT / "samples" / "tau-bench-airline.jsonl"
SMALL = ("model.context_length=4000", "compression.protect_last_n=4")

# A plugin engine written from scratch: leaves every conversation as it is and
# says, in its manifest rows, which copy of it ran and with which options.
ECHO_ENGINE = '''
from hermes_pipeline.engine.base import Compaction, ContextEngine, Outcome


class EchoEngine(ContextEngine):
    name = "{name}"

    def __init__(self, services, greeting="hello"):
        self.greeting = greeting

    def should_compress(self, prompt_tokens):
        return False

    def compress(self, conversation):
        {body}
        outcome = Outcome(False, "none", 0, 0, self.name, noop_reason="echo",
                          extra={{"plugin_where": "{where}", "plugin_greeting": self.greeting}})
        return Compaction(conversation.messages, outcome)
'''

# A plugin that reuses the built-in compressor through register(ctx).
REGISTERED_ENGINE = '''
from hermes_pipeline.engine.compressor import ContextCompressor


class Wrapped(ContextCompressor):
    name = "wrapped"


def register(ctx):
    ctx.register_context_engine("wrapped", Wrapped)
'''


def write_plugin(root: Path, name: str, source: str) -> Path:
    folder = root / "plugins" / "context_engine" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(source))
    return folder


def echo(name: str, where: str = "cwd", body: str = "pass") -> str:
    return ECHO_ENGINE.format(name=name, where=where, body=body)


@pytest.fixture
def workdir(tmp_path):
    """A working directory of the user's own, with a small real input in it."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(SAMPLE, work / "tau.jsonl")
    return work


def run_in(work: Path, *overrides: str, env: dict | None = None):
    run_dir = work.parent / f"run{len(list(work.parent.glob('run*')))}"   # a fresh run folder per call
    result = run_cli(run_dir, "input=tau.jsonl", *SMALL, *overrides, env=env, cwd=work)
    rows = read_jsonl(run_dir / "manifest.jsonl") if (run_dir / "manifest.jsonl").exists() else []
    return result, rows, run_dir


def test_a_directory_plugin_class_is_found_in_the_working_directory(workdir):
    write_plugin(workdir, "echo", echo("echo"))
    result, rows, _ = run_in(workdir, "context.engine=echo", "+context.options.greeting=bonjour")
    assert result.returncode == 0, result.stderr
    assert len(rows) == 12
    assert {r["engine"] for r in rows} == {"echo"}
    assert {r["engine_fallback"] for r in rows} == {None}
    assert {r["plugin_greeting"] for r in rows} == {"bonjour"}    # context.options reach the engine only
    assert {r["status"] for r in rows} == {"unchanged"}


def test_a_directory_plugin_with_register_ctx_compacts_like_the_compressor(workdir):
    write_plugin(workdir, "wrapped", REGISTERED_ENGINE)
    result, rows, run_dir = run_in(workdir, "context.engine=wrapped")
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"wrapped"}
    assert sum(r["status"] == "compacted" for r in rows) >= 8
    inputs = read_jsonl(SAMPLE)
    outputs = read_jsonl(run_dir / "transcripts" / "tau.jsonl")
    for before, after in zip(inputs, outputs):
        assert problems(before["messages"], after["messages"]) == [], before["id"]


def test_a_plugin_package_may_import_its_own_modules(workdir):
    folder = write_plugin(workdir, "split", "from .engine import EchoEngine\n")
    (folder / "engine.py").write_text(echo("split"))
    result, rows, _ = run_in(workdir, "context.engine=split")
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"split"}


def test_an_entry_point_plugin_installed_with_pip_is_found(workdir, tmp_path):
    package = tmp_path / "pkg"
    (package / "hp_echo_plugin").mkdir(parents=True)
    (package / "hp_echo_plugin" / "__init__.py").write_text(echo("epecho", where="entry point"))
    (package / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "hp-echo-plugin"
        version = "0.1.0"

        [project.entry-points."hermes_pipeline.context_engines"]
        epecho = "hp_echo_plugin:EchoEngine"

        [tool.setuptools]
        packages = ["hp_echo_plugin"]
    '''))
    target = tmp_path / "site"
    # the real installer, offline: setuptools comes from the test environment
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                              "--no-build-isolation", "--target", str(target), str(package)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    assert list(target.glob("hp_echo_plugin-0.1.0.dist-info/entry_points.txt"))
    env = {"PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    result, rows, _ = run_in(workdir, "context.engine=epecho", env=env)
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"epecho"}
    assert {r["plugin_where"] for r in rows} == {"entry point"}
    # without the package on the path, the same name falls back
    result, rows, _ = run_in(workdir, "context.engine=epecho")
    assert {r["engine"] for r in rows} == {"compressor"}


def test_an_unknown_name_falls_back_to_the_compressor_and_says_so(workdir):
    result, rows, _ = run_in(workdir, "context.engine=nosuchengine")
    assert result.returncode == 0, result.stderr
    assert "context engine 'nosuchengine' not found" in result.stdout + result.stderr   # Hydra logs to stdout
    assert {r["engine"] for r in rows} == {"compressor"}
    fallbacks = {r["engine_fallback"] for r in rows}
    assert len(fallbacks) == 1
    why = fallbacks.pop()
    assert "nosuchengine" in why and "plugins/context_engine/nosuchengine" in why and "compressor" in why
    assert "did you mean" not in why
    assert sum(r["status"] == "compacted" for r in rows) >= 8      # it did the compressor's work
    typo, rows, _ = run_in(workdir, "context.engine=lmc")          # a typo of the lossless engine
    assert "context engine 'lmc' not found" in typo.stdout + typo.stderr
    assert {r["engine_fallback"] for r in rows} == {rows[0]["engine_fallback"]}
    assert "did you mean lcm?" in rows[0]["engine_fallback"]


@pytest.mark.parametrize("name", ["../x", "a.b", "a/b", "..", "-x"])
def test_a_name_that_is_not_a_plain_word_is_refused(workdir, name):
    (workdir / "plugins" / "context_engine").mkdir(parents=True)
    result, rows, _ = run_in(workdir, f"context.engine={name}")
    assert result.returncode == 1, result.stderr
    assert "is not a valid engine name" in result.stderr
    assert rows == []


@pytest.mark.parametrize("name", ["", "a\x00b", "nul\x00", "a b", "x" * 65, "é", "a\\b", "a:b"])
def test_check_name_refuses_what_a_command_line_cannot_easily_carry(name):
    with pytest.raises(ConfigError, match="not a valid engine name"):
        check_name(name)


def test_check_name_accepts_plain_words():
    for name in ("lcm", "my_engine", "engine-2", "X" * 64):
        check_name(name)


def test_a_symlinked_plugin_folder_pointing_outside_is_refused(workdir, tmp_path):
    outside = write_plugin(tmp_path / "elsewhere", "evil", echo("evil"))
    (workdir / "plugins" / "context_engine").mkdir(parents=True)
    (workdir / "plugins" / "context_engine" / "evil").symlink_to(outside, target_is_directory=True)
    result, rows, _ = run_in(workdir, "context.engine=evil")
    assert result.returncode == 1, result.stderr
    assert "points outside" in result.stderr and "refused" in result.stderr
    assert rows == []


def test_a_symlinked_init_file_pointing_outside_is_refused(workdir, tmp_path):
    outside = write_plugin(tmp_path / "elsewhere", "evil", echo("evil"))
    folder = workdir / "plugins" / "context_engine" / "evil"
    folder.mkdir(parents=True)
    (folder / "__init__.py").symlink_to(outside / "__init__.py")
    result, _, _ = run_in(workdir, "context.engine=evil")
    assert result.returncode == 1 and "points outside" in result.stderr


def test_a_symlink_inside_the_plugin_folder_is_fine(workdir):
    real = write_plugin(workdir, "real", echo("alias"))
    (workdir / "plugins" / "context_engine" / "alias").symlink_to(real, target_is_directory=True)
    result, rows, _ = run_in(workdir, "context.engine=alias")
    assert result.returncode == 0, result.stderr
    assert {r["engine"] for r in rows} == {"alias"}


def test_a_plugin_that_raises_in_compress_costs_only_that_conversation(workdir):
    body = 'if int(conversation.id.split("-")[1]) % 3 == 0:\n' \
           '            raise RuntimeError(f"boom on {conversation.id}")'
    write_plugin(workdir, "flaky", echo("flaky", body=body))
    result, rows, run_dir = run_in(workdir, "context.engine=flaky")
    assert result.returncode == 2, result.stderr          # records quarantined, the run completed
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(rows) == 12 and 1 <= len(failed) < 12
    for row in failed:
        assert f"RuntimeError: boom on {row['id']}" in row["error"]
    assert {r["engine"] for r in rows if r["status"] != "failed"} == {"flaky"}
    quarantined = read_jsonl(run_dir / "quarantine.jsonl")
    assert sorted(q["reason"] for q in quarantined) == sorted(r["error"] for r in failed)
    written = read_jsonl(run_dir / "transcripts" / "tau.jsonl")
    assert len(written) == 12 - len(failed)


def test_a_plugin_that_fails_to_import_is_a_config_error(workdir):
    write_plugin(workdir, "broken", "import a_module_that_does_not_exist_anywhere\n")
    result, rows, _ = run_in(workdir, "context.engine=broken")
    assert result.returncode == 1
    assert "failed to load" in result.stderr and "a_module_that_does_not_exist_anywhere" in result.stderr
    assert "Traceback" not in result.stderr and rows == []


def test_a_plugin_without_an_engine_is_a_config_error(workdir):
    write_plugin(workdir, "empty", "X = 1\n")
    result, _, _ = run_in(workdir, "context.engine=empty")
    assert result.returncode == 1 and "exactly one ContextEngine subclass" in result.stderr


def test_plugins_dirs_are_searched_after_the_working_directory(workdir, tmp_path):
    extra = tmp_path / "extra"
    write_plugin(workdir, "both", echo("both", where="cwd"))
    write_plugin(extra, "both", echo("both", where="dirs"))
    write_plugin(extra, "only_extra", echo("only_extra", where="dirs"))
    result, rows, _ = run_in(workdir, "context.engine=both", f"plugins.dirs=[{extra}]")
    assert result.returncode == 0, result.stderr
    assert {r["plugin_where"] for r in rows} == {"cwd"}
    result, rows, _ = run_in(workdir, "context.engine=only_extra", f"plugins.dirs=[{extra}]")
    assert result.returncode == 0, result.stderr
    assert {r["plugin_where"] for r in rows} == {"dirs"}
    result, rows, _ = run_in(workdir, "context.engine=only_extra")        # not searched unless listed
    assert {r["engine"] for r in rows} == {"compressor"}
