"""Files as they come: JSON arrays, .gz / .zst archives, files that are not text, several inputs, and the
files of an input folder that are not read, named with why."""
from __future__ import annotations

import gzip
import json
import shlex
import shutil
from collections import Counter
from pathlib import Path

import zstandard

from hermes_pipeline.inputs.contents import BINARY, DOCUMENT, JSONL, TEXT, read_input, sniff
from hermes_pipeline.inputs.jsonl import Rejected, Unparsed
from hermes_pipeline.show import main as show_main
from testkit.env import CORPUS, REAL, ROOT, TAU_BENCH, read_jsonl, run_cli, shared

TAU_CORPUS = CORPUS / "tau-bench" / "gpt-4o-airline.jsonl"


def statuses(run: Path) -> Counter:
    return Counter(row["status"] for row in read_jsonl(run / "manifest.jsonl"))


def tau_bench_array(path: Path, source: Path | None = None) -> Path:
    """The corpus' tau-bench runs (or those of `source`) laid out as tau-bench's own
    historical_trajectories/*.json files: one indented JSON array of {task_id, trial, reward, info, traj}."""
    records = read_jsonl(source or shared(TAU_CORPUS))
    runs = [{"task_id": r["metadata"]["task_id"], "trial": r["metadata"]["trial"], "reward": r["metadata"]["reward"],
             "info": {"task": {"user_id": r["id"]}, "source": "user",
                      "reward_info": {"reward": r["metadata"]["reward"]}},
             "traj": r["messages"]} for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(runs, indent=2))
    return path


def png(path: Path) -> Path:
    """A real PNG image, drawn by matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure = plt.figure(figsize=(2, 2))
    plt.plot([0, 1, 2], [2, 0, 1])
    figure.savefig(path, format="png")
    plt.close(figure)
    return path


# -- JSON arrays -----------------------------------------------------------------------

def test_a_4mb_json_array_of_trajectories_is_read_as_its_200_conversations(tmp_path):
    """The issue's gpt-4o-airline.json is 4 MB; the corpus copy lost each run's `info`: 3.6 MB here."""
    source = tau_bench_array(tmp_path / "in" / "gpt-4o-airline.json")
    assert source.stat().st_size > 3_500_000 and source.read_text().count("\n") > 35_000
    (tmp_path / "in" / "README.md").write_text("# tau-bench historical trajectories\n")
    result = run_cli(tmp_path / "run", f"input={tmp_path / 'in'}", "model.context_length=16000", "quiet=true")
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) == 200 and {r["status"] for r in rows} == {"compacted", "unchanged"}
    assert len({r["id"] for r in rows}) == 200 and rows[1]["source"].endswith("gpt-4o-airline.json:" + str(
        next(i for i, line in enumerate(source.read_text().splitlines(), 1) if line == "  {" and i > 2)))
    written = json.loads((tmp_path / "run" / "transcripts" / source.name).read_text())   # a JSON array again
    original = json.loads(source.read_text())
    assert len(written) == 200 and all(set(w) == set(o) for w, o in zip(written, original))
    kept = [w for w, row in zip(written, rows) if row["status"] == "unchanged"]
    assert kept == [o for o, row in zip(original, rows) if row["status"] == "unchanged"]
    assert all(len(w["traj"]) < len(o["traj"]) for w, o, row in zip(written, original, rows)
               if row["status"] == "compacted")
    log = (tmp_path / "run" / "cli.log").read_text()
    assert "(1 file(s)" in log and "not read: " + str(tmp_path / "in" / "README.md") + ": text, not JSON" in log
    assert (tmp_path / "run" / "manifest.jsonl").stat().st_size < 400_000    # not 29 MB of quarantined lines


def test_array_elements_keep_their_exact_bytes_and_line_in_the_quarantine(tmp_path):
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    text = '[\n  {"messages": 3},\n  ' + json.dumps(good) + ',\n  {"messages": [\n    {"role": 7}\n  ]}\n]\n'
    source = tmp_path / "mixed.json"
    source.write_text(text)
    contents = sniff(source)
    assert contents.kind == DOCUMENT and contents.what == "array"
    items = list(read_input(str(source), contents, 1 << 20))
    assert [i.line_no for i in items] == [2, 3, 4] and all(isinstance(i, Unparsed) for i in items)
    assert [text[i.span[0]:i.span[0] + i.span[1]] for i in items] == [
        '{"messages": 3}', json.dumps(good), '{"messages": [\n    {"role": 7}\n  ]}']
    result = run_cli(tmp_path / "run", f"input={source}", "quiet=true")
    assert result.returncode == 2
    quarantined = read_jsonl(tmp_path / "run" / "quarantine.jsonl")
    assert [q["source"] for q in quarantined] == [f"{source}:2", f"{source}:4"]
    assert quarantined[1]["raw"] == '{"messages": [\n    {"role": 7}\n  ]}'
    assert json.loads((tmp_path / "run" / "transcripts" / "mixed.json").read_text()) == [good]


def test_a_broken_or_oversized_document_says_where(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"a": 1},\n  {"b": [1, 2}\n]\n')
    items = list(read_input(str(broken), sniff(broken), 1 << 20))
    assert isinstance(items[-1], Rejected) and items[-1].line_no == 3 and "malformed JSON document" in items[-1].reason
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"messages": [{"role": "user", "content": "x" * 5000}]}, {"n": 1}]))
    items = list(read_input(str(big), sniff(big), 2048))
    assert isinstance(items[0], Rejected) and "larger than input.max_record_bytes" in items[0].reason
    assert isinstance(items[1], Unparsed) and items[1].raw == b'{"n": 1}'
    single = tmp_path / "one.json"                      # one pretty-printed object: one record
    single.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}, indent=2))
    assert sniff(single).kind == DOCUMENT and len(list(read_input(str(single), sniff(single), 1 << 20))) == 1
    lines = tmp_path / "arrays.jsonl"                    # JSON Lines whose values are arrays stay lines
    lines.write_text("[1, 2]\n[3]\n")
    assert sniff(lines).kind == JSONL


# -- JSON documents: what did not change comes back byte for byte ------------------------

def swe_agent_traj(path: Path) -> Path:
    """A trajectory laid out as SWE-agent writes its `.traj` files (`json.dumps(data, indent=2)`, no final
    newline): the chat messages under `history`, the steps under `trajectory`, the outcome under `info`.
    Synthetic (no real one can be shipped): the messages are a real tau-bench conversation's."""
    messages = read_jsonl(TAU_BENCH)[7]["messages"]
    history = [{**m, "agent": "main", "message_type": "observation" if m["role"] == "tool" else m["role"]}
               for m in messages]
    steps = [{"action": m["content"] or "", "observation": "", "thought": "", "state": "{}"}
             for m in messages if m["role"] == "assistant"]
    data = {"environment": "swe_main", "trajectory": steps, "history": history,
            "info": {"exit_status": "submitted", "model_stats": {"instance_cost": 0.41, "api_calls": len(steps)}},
            "replay_config": "{}"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def windows_messages(path: Path) -> Path:
    """One conversation as an array of chat messages (one message an element), as a Windows tool writes it:
    a byte order mark, CRLF line ends, tab indentation, `", "` separators inside the elements."""
    messages = read_jsonl(TAU_BENCH)[3]["messages"]
    text = "\ufeff[\r\n\t" + ",\r\n\t".join(json.dumps(m) for m in messages) + "\r\n]\r\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            return reader.read()
    return data


def test_json_documents_a_run_leaves_unchanged_come_back_byte_for_byte(tmp_path):
    """The issue's 22 of 22: an indented .traj, a tau-bench array (plain, .gz and .zst: the decompressed text
    is the same bytes) and a messages array with a BOM, CRLF and tabs, none compacted, are written as read;
    so is a file of one message a line (the same conversation), lines as json.dumps writes them."""
    folder = tmp_path / "in"
    inputs = [swe_agent_traj(folder / "swe" / "django__django-11099.traj"),
              tau_bench_array(folder / "tau" / "gpt-4o-airline.json", TAU_BENCH),
              windows_messages(folder / "win" / "session.json")]
    inputs.append(folder / "lines" / "session.jsonl")
    inputs[-1].parent.mkdir()
    inputs[-1].write_text("".join(json.dumps(m) + "\n" for m in read_jsonl(TAU_BENCH)[3]["messages"]))
    for suffix, compress in ((".gz", gzip.compress), (".zst", zstandard.ZstdCompressor(level=19).compress)):
        packed = folder / "packed" / f"airline.json{suffix}"
        packed.parent.mkdir(exist_ok=True)
        packed.write_bytes(compress(inputs[1].read_bytes()))
        inputs.append(packed)
    result = run_cli(tmp_path / "run", f"input={folder}", "quiet=true")
    assert result.returncode == 0, result.stderr
    assert statuses(tmp_path / "run") == {"unchanged": 1 + 40 + 1 + 1 + 40 + 40}
    for source in inputs:
        written = tmp_path / "run" / "transcripts" / source.relative_to(folder)
        assert decompressed(written) == decompressed(source), source.name
    assert (tmp_path / "run" / "transcripts" / "packed" / "airline.json.gz").read_bytes()[:2] == b"\x1f\x8b"


def _document_as_written(source_values: list, written: list, rows: list[dict]) -> bytes:
    """What a run must write for an array laid out as json.dumps(indent=2) lays it out: each unchanged
    element as it was (its own indentation), each compacted one re-serialized, the array's own separators."""
    from hermes_pipeline.inputs.jsonl import dumps
    parts = [json.dumps(o, indent=2).replace("\n", "\n  ").encode() if row["status"] == "unchanged" else dumps(w)
             for o, w, row in zip(source_values, written, rows)]
    return b"[\n  " + b",\n  ".join(parts) + b"\n]"


def test_a_document_with_some_records_compacted_keeps_the_others_bytes_and_its_layout(tmp_path):
    source = tau_bench_array(tmp_path / "in" / "gpt-4o-airline.json", TAU_BENCH)
    traj = swe_agent_traj(tmp_path / "in" / "one.traj")
    result = run_cli(tmp_path / "run", f"input={tmp_path / 'in'}", "model.context_length=8000", "quiet=true")
    assert result.returncode == 0, result.stderr
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if "gpt-4o-airline" in r["source"]]
    assert Counter(r["status"] for r in rows)["compacted"] >= 10 and Counter(r["status"] for r in rows)["unchanged"] >= 10
    out = (tmp_path / "run" / "transcripts" / source.name).read_bytes()
    written = json.loads(out)
    assert out == _document_as_written(json.loads(source.read_text()), written, rows)
    from hermes_pipeline.inputs.jsonl import dumps
    traj_out = (tmp_path / "run" / "transcripts" / traj.name).read_bytes()     # compacted: re-serialized, no newline added
    assert traj_out == dumps(json.loads(traj_out)) and json.loads(traj_out) != json.loads(traj.read_text())


def test_a_compressed_document_killed_mid_file_then_changed_is_written_as_a_clean_run_writes_it(tmp_path):
    """Incremental runs and kill -9 resume over a .json.gz: the same bytes as one clean run, and an element
    changed in the input is the only one done again, the others kept as they were."""
    plain = tau_bench_array(tmp_path / "src" / "airline.json", TAU_BENCH)
    source = tmp_path / "in" / "airline.json.gz"
    source.parent.mkdir()
    source.write_bytes(gzip.compress(plain.read_bytes()))
    settings = ("model.context_length=8000", "quiet=true")
    clean = run_cli(tmp_path / "clean", f"input={source}", *settings)
    assert clean.returncode == 0, clean.stderr
    clean_out = (tmp_path / "clean" / "transcripts" / source.name).read_bytes()
    rows = read_jsonl(tmp_path / "clean" / "manifest.jsonl")
    assert gzip.decompress(clean_out) == _document_as_written(json.loads(plain.read_text()),
                                                              json.loads(gzip.decompress(clean_out)), rows)
    killed = run_cli(tmp_path / "runs" / "1", f"input={source.parent}", f"output.dir={tmp_path / 'out'}",
                     "incremental=true", *settings, env={"HERMES_FAULT": "listed:9"})
    assert killed.returncode < 0 and not (tmp_path / "out" / source.name).exists()
    assert _nightly(tmp_path, "2").returncode == 0
    assert (tmp_path / "out" / source.name).read_bytes() == clean_out
    # one element changed tonight: only it is done again; the output is what a clean run of the new input writes
    runs = json.loads(plain.read_text())
    unchanged_at = next(i for i, row in enumerate(rows) if row["status"] == "unchanged")
    runs[unchanged_at]["traj"][1]["content"] += " (and a window seat, please)"
    plain.write_text(json.dumps(runs, indent=2))
    source.write_bytes(gzip.compress(plain.read_bytes()))
    assert _nightly(tmp_path, "3").returncode == 0
    assert len(read_jsonl(tmp_path / "runs" / "3" / "manifest.jsonl")) == 1
    again = run_cli(tmp_path / "clean2", f"input={source}", *settings)
    assert again.returncode == 0
    assert (tmp_path / "out" / source.name).read_bytes() == \
        (tmp_path / "clean2" / "transcripts" / source.name).read_bytes()


# -- not text, not read ------------------------------------------------------------------

def test_a_png_in_an_input_folder_is_one_quarantine_entry(tmp_path):
    folder = tmp_path / "in"
    shutil.copytree(REAL / "tau-bench", folder)
    picture = png(folder / "screenshot.png")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    assert sniff(picture).kind == BINARY and sniff(folder / "LICENSE").kind == TEXT
    result = run_cli(tmp_path / "run", f"input={folder}", "quiet=true")
    assert result.returncode == 2, result.stderr
    quarantined = read_jsonl(tmp_path / "run" / "quarantine.jsonl")
    assert len(quarantined) == 1 and quarantined[0]["source"] == f"{picture}:0"
    assert "not text: a PNG image" in quarantined[0]["reason"]
    import base64
    assert base64.b64decode(quarantined[0]["raw_base64"]) == picture.read_bytes()     # nothing lost
    assert statuses(tmp_path / "run")["quarantined"] == 1
    log = (tmp_path / "run" / "cli.log").read_text()
    for name, why in (("LICENSE", "text, not JSON (it starts 'MIT License"), ("PROVENANCE.md", "text, not JSON"),
                      (".DS_Store", "a hidden file")):
        assert f"not read: {folder / name}: {why}" in log
    assert "3 not read, listed below" in log


# -- compressed archives -----------------------------------------------------------------

def _nightly(base: Path, name: str, *extra: str):
    return run_cli(base / "runs" / name, f"input={base / 'in'}", f"output.dir={base / 'out'}", "incremental=true",
                   "model.context_length=8000", "quiet=true", *extra)


def test_a_jsonl_gz_archive_round_trips(tmp_path):
    source = tmp_path / "in" / "tau.jsonl.gz"
    source.parent.mkdir()
    source.write_bytes(gzip.compress(TAU_BENCH.read_bytes()))
    plain = run_cli(tmp_path / "plain", f"input={source}", "quiet=true")       # 200K context: nothing to compact
    assert plain.returncode == 0 and statuses(tmp_path / "plain") == {"unchanged": 40}
    out = tmp_path / "plain" / "transcripts" / "tau.jsonl.gz"
    assert out.read_bytes()[:2] == b"\x1f\x8b" and gzip.decompress(out.read_bytes()) == TAU_BENCH.read_bytes()
    # compacted, incrementally: the same bytes as a clean run, a rerun reads nothing, an appended line is all
    # that is done next time, and a run killed mid-file is finished by the next one
    clean = run_cli(tmp_path / "clean", f"input={source}", "model.context_length=8000", "quiet=true")
    assert clean.returncode == 0 and statuses(tmp_path / "clean")["compacted"] > 0
    first = _nightly(tmp_path, "1")
    assert first.returncode == 0
    written = (tmp_path / "out" / "tau.jsonl.gz").read_bytes()
    assert written == (tmp_path / "clean" / "transcripts" / "tau.jsonl.gz").read_bytes()
    assert _nightly(tmp_path, "2").returncode == 0
    assert json.loads((tmp_path / "runs" / "2" / "summary.json").read_text())["skipped_unchanged"] == 40
    assert (tmp_path / "out" / "tau.jsonl.gz").read_bytes() == written
    appended = {**read_jsonl(TAU_BENCH)[0], "id": "appended-tonight"}
    source.write_bytes(gzip.compress(TAU_BENCH.read_bytes() + json.dumps(appended).encode() + b"\n"))
    assert _nightly(tmp_path, "3").returncode == 0
    assert len(read_jsonl(tmp_path / "runs" / "3" / "manifest.jsonl")) == 1        # only the new line
    lines = gzip.decompress((tmp_path / "out" / "tau.jsonl.gz").read_bytes()).splitlines(keepends=True)
    assert b"".join(lines[:40]) == gzip.decompress(written) and len(lines) == 41


def test_a_gz_archive_killed_mid_file_is_finished_byte_identical(tmp_path):
    source = tmp_path / "in" / "tau.jsonl.gz"
    source.parent.mkdir()
    source.write_bytes(gzip.compress(TAU_BENCH.read_bytes()))
    clean = run_cli(tmp_path / "clean", f"input={source}", "model.context_length=8000", "quiet=true")
    assert clean.returncode == 0
    killed = run_cli(tmp_path / "runs" / "1", f"input={source.parent}", f"output.dir={tmp_path / 'out'}",
                     "incremental=true", "model.context_length=8000", env={"HERMES_FAULT": "listed:9"})
    assert killed.returncode < 0
    assert not (tmp_path / "out" / "tau.jsonl.gz").exists()
    assert _nightly(tmp_path, "2").returncode == 0
    assert (tmp_path / "out" / "tau.jsonl.gz").read_bytes() == \
        (tmp_path / "clean" / "transcripts" / "tau.jsonl.gz").read_bytes()
    assert not list((tmp_path / "out").rglob("*.part"))


def test_a_zst_archive_is_read_and_written_back_zst(tmp_path):
    source = tmp_path / "tau.jsonl.zst"
    source.write_bytes(zstandard.ZstdCompressor(level=19).compress(TAU_BENCH.read_bytes()))
    result = run_cli(tmp_path / "run", f"input={source}", "model.context_length=8000", "quiet=true")
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) == 40 and rows[3]["source"] == f"{source}:4"
    out = (tmp_path / "run" / "transcripts" / "tau.jsonl.zst").read_bytes()
    assert out[:4] == b"\x28\xb5\x2f\xfd"
    with zstandard.ZstdDecompressor().stream_reader(out) as reader:
        lines = reader.read().splitlines()
    assert len(lines) == 40
    originals = TAU_BENCH.read_bytes().splitlines()
    assert [line == original for line, original in zip(lines, originals)] == \
        [row["status"] == "unchanged" for row in rows]


# -- several inputs ----------------------------------------------------------------------

def test_several_inputs_are_read_each_under_its_own_name(tmp_path):
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        shutil.copy(TAU_BENCH, tmp_path / name / "chats.jsonl")
    result = run_cli(tmp_path / "run", f"input=[{tmp_path / 'alpha'},{tmp_path / 'beta'}]", "quiet=true")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "run" / "transcripts"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.jsonl")) == ["alpha/chats.jsonl", "beta/chats.jsonl"]
    assert statuses(tmp_path / "run") == {"unchanged": 80}
    same = run_cli(tmp_path / "run2", f"input.paths=[{tmp_path / 'alpha'},{tmp_path / 'beta'}]", "quiet=true")
    assert same.returncode == 0 and (tmp_path / "run2" / "transcripts" / "beta" / "chats.jsonl").exists()
    comma = run_cli(tmp_path / "run3", f"input={tmp_path / 'alpha'},{tmp_path / 'beta'}")
    assert comma.returncode == 1 and "input.paths=[A,B]" in comma.stderr and "Traceback" not in comma.stderr
    shutil.copy(TAU_BENCH, tmp_path / "single.jsonl")          # a file given by name keeps its name
    mixed = run_cli(tmp_path / "run4", f"input=[{tmp_path / 'alpha'},{tmp_path / 'single.jsonl'}]", "quiet=true")
    assert mixed.returncode == 0 and (tmp_path / "run4" / "transcripts" / "single.jsonl").exists()
    clash = run_cli(tmp_path / "run5",
                    f"input=[{tmp_path / 'alpha' / 'chats.jsonl'},{tmp_path / 'beta' / 'chats.jsonl'}]")
    assert clash.returncode == 1 and "would both be written as chats.jsonl" in clash.stderr


def test_a_cut_short_archive_gives_its_lines_then_one_entry_saying_where(tmp_path):
    whole = gzip.compress(TAU_BENCH.read_bytes())
    source = tmp_path / "cut.jsonl.gz"
    source.write_bytes(whole[: len(whole) // 2])            # a copy that stopped half way
    result = run_cli(tmp_path / "run", f"input={source}", "quiet=true")
    assert result.returncode == 2, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert 5 < len(rows) < 40 and [r["status"] for r in rows[:-1]] == ["unchanged"] * (len(rows) - 1)
    assert rows[-1]["status"] == "quarantined" and rows[-1]["source"] == f"{source}:{len(rows)}"
    assert "could not be read past line" in rows[-1]["error"]
    out = gzip.decompress((tmp_path / "run" / "transcripts" / source.name).read_bytes())
    assert out == b"".join(TAU_BENCH.read_bytes().splitlines(keepends=True)[: len(rows) - 1])


def test_home_paths_as_the_docs_give_them_and_as_sh_passes_them(tmp_path, monkeypatch, capsys):
    """`~` reaches the tool unexpanded when quoted, or from sh (cron): Hydra's grammar refuses it, the tool
    expands it. The several-inputs line of docs/formats.md, run as written, with HOME a folder of the test's own."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    for folder in (home / ".codex" / "sessions", cwd / "archive"):
        folder.mkdir(parents=True)
        shutil.copy(TAU_BENCH, folder / "chats.jsonl")
    page = (ROOT / "docs" / "formats.md").read_text()
    line = next(text for text in page.splitlines() if "several inputs (input.paths)" in text)
    args = shlex.split(line.split("#")[0])
    assert args[0] == "hermes-pipeline"
    run = run_cli(tmp_path / "run", *args[1:], "quiet=true", env={"HOME": str(home)}, cwd=cwd)
    assert run.returncode == 0, run.stderr
    out = tmp_path / "run" / "transcripts"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.jsonl")) == ["archive/chats.jsonl",
                                                                            "sessions/chats.jsonl"]
    # as sh passes `input=~/...` on (no tilde expansion there), a glob, and output.dir
    for n, spec in enumerate(("~/.codex/sessions", "'~/.codex/sessions'", "~/.codex/**/*.jsonl")):
        alone = run_cli(tmp_path / f"alone{n}", f"input={spec}", f"output.dir=~/out{n}", "quiet=true",
                        "model.context_length=4000", env={"HOME": str(home)}, cwd=cwd)
        assert alone.returncode == 0, (spec, alone.stderr)
        assert len(list((home / f"out{n}").rglob("chats.jsonl"))) == 1, spec
    # hermes-pipeline-show finds a compacted conversation's output in that output.dir
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    row = next(r for r in read_jsonl(tmp_path / "alone0" / "manifest.jsonl") if r["status"] == "compacted")
    assert show_main([str(tmp_path / "alone0"), row["id"], "--source", row["source"]]) == 0, capsys.readouterr().err
