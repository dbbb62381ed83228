"""Files shipped inside the package, found with :mod:`importlib.resources` (issue 12 item 4).

- ``ibemu.scenarios``: the repository's ``scenarios/`` folder -- every shipped scenario
  (``*.toml``) and the opensm.conf files they name (``*.conf``).
- ``ibemu.layers``: the repository's ``layers/`` folder -- the Scapy layers and the
  Wireshark plugin ``wireshark/ibemu.lua``.

Both are mapped by setuptools ``package-dir`` in pyproject.toml; in a source checkout the
symbolic links ``ibemu/scenarios`` and ``ibemu/layers`` give the same names
(docs/packaging.md).  Nothing here imports Scapy.
"""
from __future__ import annotations

import importlib.util
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

SCENARIOS = "ibemu.scenarios"
LAYERS = "ibemu.layers"
LUA_IN_TREE = "layers/wireshark/ibemu.lua"     # the plugin's place in the repository

__all__ = ["SCENARIOS", "LAYERS", "scenario_names", "shipped_scenario", "scenario_source",
           "scenario_description", "scenario_companions", "copy_scenario", "lua_plugin"]


def scenario_names() -> list[str]:
    """The shipped scenarios' names (file stems), sorted."""
    return sorted(p.name[:-len(".toml")] for p in files(SCENARIOS).iterdir()
                  if p.name.endswith(".toml"))


def shipped_scenario(name: str) -> Traversable:
    """The shipped scenario file *name* (``"quickstart"`` or ``"quickstart.toml"``);
    :class:`FileNotFoundError` when there is none."""
    stem = name.removesuffix(".toml")
    f = files(SCENARIOS) / (stem + ".toml")
    if "/" in name or not stem or not f.is_file():
        raise FileNotFoundError("no shipped scenario named %r (shipped: %s)"
                                % (name, ", ".join(scenario_names())))
    return f


def scenario_source(arg: str) -> str | Path:
    """What ``ibemu run ARG`` reads: *arg* itself when it names an existing file (or
    names nothing shipped, so that loading reports the missing file), else the shipped
    scenario of that name (a filesystem path: the package is installed unzipped)."""
    if Path(arg).exists():
        return arg
    try:
        f = shipped_scenario(arg)
    except FileNotFoundError:
        return arg
    return Path(str(f))


def scenario_description(name: str) -> str:
    """The first sentence of a shipped scenario's opening comment (its title line)."""
    lines = []
    for line in shipped_scenario(name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if not text:
            break
        lines.append(text)
    text = " ".join(lines)
    end = text.find(". ")
    return text[:end + 1] if end >= 0 else text


def scenario_companions(name: str) -> list[str]:
    """The other shipped files a shipped scenario names by a quoted file name (an
    opensm.conf such as ``opensm_file = "cca_opensm.conf"``), sorted."""
    text = shipped_scenario(name).read_text(encoding="utf-8")
    return sorted(p.name for p in files(SCENARIOS).iterdir()
                  if not p.name.endswith((".toml", ".py")) and p.is_file()
                  and ('"%s"' % p.name in text or "'%s'" % p.name in text))


def copy_scenario(name: str, folder: str | Path) -> list[Path]:
    """Copy the shipped scenario *name* and its companions into *folder* (made if
    missing) for editing; returns the paths written.  An existing file is not
    overwritten: :class:`FileExistsError`."""
    f = shipped_scenario(name)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    sources = [f] + [files(SCENARIOS) / c for c in scenario_companions(name)]
    targets = [out / src.name for src in sources]
    for t in targets:
        if t.exists():
            raise FileExistsError(t)
    for src, t in zip(sources, targets):
        t.write_bytes(src.read_bytes())
    return targets


def lua_plugin() -> str:
    """Where ibemu's Wireshark plugin is: the repository's copy when run from a source
    checkout's root, else the installed one (found without importing Scapy)."""
    if Path(LUA_IN_TREE).is_file():
        return LUA_IN_TREE
    spec = importlib.util.find_spec(LAYERS)
    if spec is not None and spec.origin:
        installed = Path(spec.origin).parent / "wireshark" / "ibemu.lua"
        if installed.is_file():
            return str(installed)
    return LUA_IN_TREE
