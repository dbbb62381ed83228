"""The generated reference pages of the documentation site (issue 30 Deliver 1 and 3).

mkdocs-gen-files runs this script when the site is built (mkdocs.yml): it writes

- reference/cli.md: every ``ibemu`` command's help, from the argument parsers
  (:func:`ibemu.cli.build_parser` and the parsers it adds);
- reference/scenario.md: every scenario key with its type, unit, default, range and
  meaning, from :data:`ibemu.scenario.keyref.KEYS` (tests/test_scenario_keyref.py keeps
  that table equal to what the validators accept);
- reference/api.md: the Python API, rendered by mkdocstrings from the docstrings.

``python docs/gen_ref.py OUTDIR`` writes the same pages into OUTDIR (to read them without
building the site).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))           # the checkout's ibemu, whatever is installed

os.environ["COLUMNS"] = "100"           # argparse wraps the help to this width

from ibemu.cli import build_parser  # noqa: E402
from ibemu.scenario.keyref import SECTIONS  # noqa: E402

API_MODULES = [
    ("The top-level names", "ibemu"),
    ("Scenarios", "ibemu.scenario.read"),
    ("Scenario builders", "ibemu.scenario.builders"),
    ("Running", "ibemu.run"),
    ("Reading results back", "ibemu.results.reader"),
    ("Runs in a notebook (pandas)", "ibemu.results.frames"),
    ("Sweeps in a notebook", "ibemu.results.sweep_frames"),
    ("Congestion-control schemes: the registry", "ibemu.cc.registry"),
    ("Congestion-control schemes: the hooks", "ibemu.fabric.hooks"),
    ("Errors", "ibemu.errors"),
]


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:                      # argparse keeps them here; no public API
        if isinstance(action, argparse._SubParsersAction):
            out += list(action.choices.items())
    return out


def cli_page() -> str:
    lines = ["# Command line", "",
             "Generated from the argument parsers (`ibemu/cli/` and the parsers it adds) when the",
             "site is built; `ibemu COMMAND --help` prints the same.", ""]

    def walk(parser: argparse.ArgumentParser, depth: int) -> None:
        lines.extend(["#" * depth + " `%s`" % parser.prog, "", "```text", parser.format_help().rstrip(), "```", ""])
        for _, child in _subparsers(parser):
            walk(child, min(depth + 1, 4))

    walk(build_parser(), 2)
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") or " "


def scenario_page() -> str:
    lines = ["# Scenario keys", "",
             "Every key a scenario file accepts, generated from `ibemu/scenario/keyref.py` when the site",
             "is built; tests/test_scenario_keyref.py fails when that table and the validators differ.",
             "`[]` stands for any entry of an array of tables (`flow[2].src` is written `flow[].src`),",
             "`<...>` for a key you choose (a port number, a node name, a link label);",
             "`template(NAME).KEY` is a parameter of template NAME, written `KEY` in `[template]`.",
             "The [scenario guide](scenario-guide.md) explains the units and how the sections work",
             "together.", "",
             "Units: a **time** is a string with `ns`, `us`, `ms` or `s` (`\"40ns\"`); a **size** is",
             "bytes, or a string with `B`, `KB`, `KiB`, `MB`, `MiB`; a **rate** is bytes/s, an IB link",
             "name (`\"4x_sdr\"`) or a string (`\"8Gb/s\"`, `\"1GB/s\"`).", ""]
    for title, keys in SECTIONS:
        lines += ["## %s" % title, "", "| key | type | unit | default | range | meaning |",
                  "|---|---|---|---|---|---|"]
        for k in keys:
            lines.append("| `%s` | %s | %s | %s | %s | %s |" % (
                k.path, _cell(k.type), _cell(k.unit), _cell(k.default), _cell(k.range), _cell(k.meaning)))
        lines.append("")
    return "\n".join(lines)


def api_page() -> str:
    lines = ["# Python API", "",
             "Rendered from the docstrings by mkdocstrings when the site is built.", ""]
    for title, module in API_MODULES:
        lines += ["## %s" % title, "", "::: %s" % module, "    options:", "      heading_level: 3",
                  "      show_root_heading: false", "      members_order: source", ""]
    return "\n".join(lines)


PAGES = {"reference/cli.md": cli_page, "reference/scenario.md": scenario_page, "reference/api.md": api_page}


def write_with_gen_files() -> None:
    import mkdocs_gen_files
    for name, make in PAGES.items():
        with mkdocs_gen_files.open(name, "w") as fh:
            fh.write(make())
        mkdocs_gen_files.set_edit_path(name, "docs/gen_ref.py")


if __name__ == "__main__" and len(sys.argv) == 2:
    out = Path(sys.argv[1])
    for name, make in PAGES.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(make(), encoding="utf-8")
else:
    write_with_gen_files()
