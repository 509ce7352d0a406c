"""The documentation lists what the code has: every option of every command in the CLI reference,
every public name in the API reference, and in docs/reproduce exactly the raw files the benchmarks
page cites. So none of them can drift from the code or the data silently."""

import importlib
import re
from pathlib import Path

import pytest

from lastedge.cli.app import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"
REPRODUCE = DOCS / "reproduce"
# A file name on the benchmarks page, possibly a pattern: `*` for any part, {a,b} for either.
CITED = re.compile(r"(?:docs/)?(?:reproduce/)?([\w{},*.-]+\.(?:jsonl|json|md|png))")


def documented_options() -> dict[str, set[str]]:
    """The CLI reference's options per command: the first word of the first cell of each table row
    under a ``## `lastedge COMMAND``` heading ("" for the top-level command)."""
    sections: dict[str, set[str]] = {}
    command = None
    for line in (DOCS / "cli.md").read_text().splitlines():
        heading = re.fullmatch(r"## `lastedge(?: (\S+))?`", line)
        if heading or line.startswith("## "):
            command = (heading.group(1) or "") if heading else None
            sections.setdefault(command, set())
            continue
        cell = re.match(r"\| `([^` ]+)", line)
        if command is not None and cell:
            sections[command].add(cell.group(1))
    sections.pop(None, None)
    return sections


def parser_options(parser, commands) -> set[str]:
    """An argparse parser's options (each by its longest spelling) and positionals (by metavar),
    without --help and the sub-command choice."""
    names = set()
    for action in parser._actions:
        if action.dest == "help" or action.choices is commands:
            continue
        names.add(max(action.option_strings, key=len) if action.option_strings
                  else action.metavar or action.dest)
    return names


def test_cli_reference_lists_every_command_and_option_and_no_other():
    parser = build_parser()
    documented = documented_options()
    assert set(documented) == {"", *parser.commands}
    assert documented.pop("") == parser_options(parser, parser.commands)
    for name, command in parser.commands.items():
        assert documented[name] == parser_options(command, parser.commands), name


def test_documented_options_are_read_from_tables():
    """The page's rows are found: a section holds its options, not the example commands."""
    assert {"--data", "--atoms", "--out", "--mu"} <= documented_options()["train"]
    assert "$" not in "".join(documented_options()["train"])


@pytest.mark.parametrize("part", ["train", "export", "runtime"])
def test_api_reference_documents_every_public_name(part):
    page = (DOCS / "api" / f"{part}.md").read_text()
    # the last part of each identifier: ``bench`` is documented as lastedge.runtime.bench.bench,
    # since lastedge.runtime.bench also names its module
    documented = set(re.findall(rf"^::: lastedge\.{part}\.(?:\w+\.)?(\w+)$", page, flags=re.M))
    assert set(importlib.import_module(f"lastedge.{part}").__all__) <= documented


def cited_patterns() -> dict[str, re.Pattern]:
    """File names the benchmarks page cites, each as a regular expression over docs/reproduce."""
    patterns = {}
    for name in CITED.findall((DOCS / "benchmarks.md").read_text()):
        regex = re.escape(name).replace(r"\*", r"[^/]*")
        regex = re.sub(r"\\\{(.*?)\\\}", lambda m: "(?:" + m.group(1).replace(",", "|") + ")", regex)
        patterns[name] = re.compile(regex)
    return patterns


def test_reproduce_folder_holds_exactly_the_files_the_benchmarks_page_cites():
    files = {path.name for path in REPRODUCE.iterdir()}
    patterns = cited_patterns()
    uncited = {name for name in files if not any(p.fullmatch(name) for p in patterns.values())}
    assert not uncited, f"files in docs/reproduce that docs/benchmarks.md does not cite: {sorted(uncited)}"
    in_folder = {name for name, p in patterns.items() if any(p.fullmatch(f) for f in files)}
    prefixed = {name for name in patterns if re.search(rf"reproduce/{re.escape(name)}",
                                                       (DOCS / "benchmarks.md").read_text())}
    assert prefixed <= in_folder, f"cited but missing: {sorted(prefixed - in_folder)}"


def heading_anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings, as MkDocs and GitHub spell them."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), flags=re.M):
        text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
        anchors.add(re.sub(r"\s+", "-", text))
    return anchors


def test_readme_links_reach_existing_pages_and_headings():
    """mkdocs --strict checks the site's links; the README is not part of the site."""
    readme = DOCS.parent / "README.md"
    links = re.findall(r"\]\(([^)#]+\.md)(?:#([^)]+))?\)", readme.read_text())
    assert links
    for target, anchor in links:
        page = DOCS.parent / target
        assert page.is_file(), target
        if anchor:
            assert anchor in heading_anchors(page), (target, anchor)
