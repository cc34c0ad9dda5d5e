"""The README and docs/ name what exists: every file path, `python -m` module and link; the README fits
on a screen or two. (The commands these pages show are run by the end-to-end tests that read them.)"""
import importlib.util
import re

import pytest

from testkit.env import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED = {ROOT / "docs" / "benchmarks.md"}     # written by `make bench`, may not be there yet
TOP = ("hermes_pipeline/", "conf/", "tests/", "testkit/", "benchmarks/", "docs/", "samples/", "agents/", ".ci/")


def names(page):
    return page.relative_to(ROOT).as_posix()


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[*`]|\[|\]\([^)]*\)", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_the_readme_fits_on_a_screen_or_two():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=names)
def test_every_path_named_exists(page):
    missing = []
    for token in re.findall(r"`([^`\s]+)`", page.read_text()):
        path = token.rstrip(",.:;")
        if path.startswith(TOP) and not re.search(r"[<>*$]", path):
            if not (ROOT / path).exists() and ROOT / path not in GENERATED:
                missing.append(path)
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=names)
def test_every_python_module_named_exists(page):
    modules = set(re.findall(r"python -m ([\w.]+)", page.read_text()))
    assert not [m for m in sorted(modules) if importlib.util.find_spec(m) is None]


@pytest.mark.parametrize("page", PAGES, ids=names)
def test_every_link_lands(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        if linked in GENERATED and not linked.exists():
            continue
        if not linked.exists() or (anchor and linked.is_file() and anchor not in anchors(linked)):
            broken.append(target)
    assert not broken, broken


def test_every_docs_page_is_in_the_index():
    index = (ROOT / "docs" / "README.md").read_text()
    assert [p.name for p in PAGES[1:] if p.name != "README.md" and f"]({p.name})" not in index] == []
