"""Every public name of popxl's API inventory exists here, under the same module path.

The names come from the reference inventory ``shared/reference/popxl_api.md`` (beside the clone),
extracted once into ``tests/data/popxl_api_names.json`` by ``extract_api_names``; regenerate the file
with ``python tests/test_api_coverage.py`` when the reference changes.
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "popxl_api.md"
NAMES_FILE = Path(__file__).parent / "data" / "popxl_api_names.json"

# Namespaces whose __all__ the reference spells out; for the others it lists attributes only.
ALL_LISTED = ("popxl", "popxl.ops", "popxl.ops.collectives", "popxl.ops.var_updates", "popxl.transforms")


# ----- extraction from the reference -----
def _sections(markdown: str) -> dict[str, str]:
    """Text under each heading, keyed by the heading line without its #s."""
    sections, heading, lines = {}, "", []
    for line in markdown.splitlines():
        if line.startswith("#"):
            sections[heading] = "\n".join(lines)
            heading, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    sections[heading] = "\n".join(lines)
    return sections


def _backticked(text: str) -> list[str]:
    """Identifiers in backticks, a span like `a, b` giving both; `__all__` is not a name."""
    names = []
    for span in re.findall(r"`([^`]*)`", text):
        for part in span.split(","):
            part = part.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", part) and part != "__all__":
                names.append(part)
    return names


def _table_names(text: str) -> tuple[list[str], list[str]]:
    """Names in the first cell of each table row: (in __all__, marked 'not in __all__')."""
    listed, unlisted = [], []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        outside = "not in `__all__`" in first_cell
        names = _backticked(first_cell)
        (unlisted if outside else listed).extend(names[:1] if outside else names)
    return listed, unlisted


def _count_row(sections: dict[str, str], item: str) -> str:
    """The count cell of the Counts table row whose item cell starts with ``item``."""
    for line in sections["Counts (summary)"].splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 2 and cells[1].startswith(item):
            return cells[2]
    raise KeyError(f"no Counts row for {item!r}")


def _without_parentheses(text: str) -> str:
    return re.sub(r"\([^)]*\)", "", text)


def extract_api_names(markdown: str) -> dict[str, dict[str, list[str]]]:
    """``{namespace: {"all": names in its __all__, "also": other public names}}``, plus
    ``"modules"`` (importable module paths)."""
    sections = _sections(markdown)
    top_all, top_also = [], []
    for heading, text in sections.items():
        if re.match(r"1\.[1-6] ", heading):
            listed, unlisted = _table_names(text)
            top_all += listed + re.findall(r"^`(\w+)` – see", text, re.M)
            top_also += unlisted
    top_also += _backticked(_without_parentheses(_count_row(sections, "extra public names imported into `popxl`")))

    op_all, op_also = [], []
    for heading, text in sections.items():
        if heading.startswith(("Elementwise", "Reductions", "Shape", "Neural", "Float8", "Random", "Control",
                               "Host IO", "Remote", "Device", "Debug")):
            listed, unlisted = _table_names(text)
            op_all += listed
            op_also += unlisted
    ops_row = _count_row(sections, "names in `popxl.ops.__all__`")
    op_all += _backticked(_without_parentheses(ops_row.split("+", 1)[1]))

    collectives = _table_names(sections["popxl.ops.collectives (9 functions)"])[0]
    collectives += _backticked(_without_parentheses(_count_row(sections, "`popxl.ops.collectives.__all__`")
                                                    .split("+", 1)[1]))
    var_updates = _table_names(sections["popxl.ops.var_updates (13 functions)"])[0]
    transforms = _table_names(sections["4. `popxl.transforms`"])[0]

    helpers = sections["5. `popxl.utils` (documented module, `api/utils.rst`) and helpers"]
    bullets = {line[2:].split(":")[0]: line for line in helpers.splitlines() if line.startswith("- ")}
    utils = []
    for bullet, text in bullets.items():
        if bullet.startswith("`popxl.") or bullet.startswith("Private"):
            continue
        named = text.split(" – ")[0].split("):")[-1]  # the names, not the words about them
        utils += re.findall(r"`(\w+)(?:\(|`)", named)
    fp8_utils = re.findall(r"`(\w+)(?:\(|`| =)", bullets["`popxl.fp8_utils`"].split(":", 1)[1])
    testing = re.findall(r"`(\w+)\(", bullets["`popxl.testing`"])

    submodules = sections["1.7 Submodules"]
    modules = re.findall(r"`(popxl(?:\.\w+)*)`", submodules.split("Tests also import")[0])
    paths: dict[str, list[str]] = {}
    for module, names in re.findall(r"`(popxl(?:\.\w+)*?)\.\{([^}]*)\}`", submodules):
        paths[module] = [n.strip() for n in names.split(",") if re.fullmatch(r"\w+", n.strip())]
    for module, name in re.findall(r"`(popxl(?:\.[a-z_]+)+)\.([A-Z]\w*)`", submodules):
        paths.setdefault(module, []).append(name)
    random_seed = re.findall(r"Also `(\w+)`, `(\w+)` in `popxl.random_seed`", markdown)[0]
    paths.setdefault("popxl.random_seed", []).extend(["create_seeds", *random_seed])
    errors = re.findall(r"`popxl\.errors` \(`(\w+)\(", submodules)
    typing_ = re.findall(r"`popxl\.typing_` \(`(\w+)`", submodules)

    names = {
        "popxl": {"all": top_all, "also": top_also},
        "popxl.ops": {"all": op_all, "also": op_also},
        "popxl.ops.collectives": {"all": collectives, "also": []},
        "popxl.ops.var_updates": {"all": var_updates, "also": []},
        "popxl.transforms": {"all": transforms, "also": []},
        "popxl.utils": {"all": [], "also": utils},
        "popxl.fp8_utils": {"all": [], "also": fp8_utils},
        "popxl.testing": {"all": [], "also": testing},
        "popxl.errors": {"all": [], "also": errors},
        "popxl.typing_": {"all": [], "also": typing_},
    }
    for module, attributes in paths.items():
        names.setdefault(module, {"all": [], "also": []})["also"] += attributes
    for entry in names.values():
        entry["all"] = sorted(set(entry["all"]))
        entry["also"] = sorted(set(entry["also"]) - set(entry["all"]))
    return {"source": "shared/reference/popxl_api.md", "modules": sorted(set(modules)), "namespaces": names}


def write_api_names() -> None:
    NAMES_FILE.parent.mkdir(exist_ok=True)
    NAMES_FILE.write_text(json.dumps(extract_api_names(REFERENCE.read_text()), indent=1) + "\n")


if __name__ == "__main__":  # regenerate the names file (before the checks below read it)
    write_api_names()
    sys.exit(f"wrote {NAMES_FILE}")


# ----- the checks -----
API = json.loads(NAMES_FILE.read_text())
NAMESPACES = API["namespaces"]

def _module(name: str):
    import popxl  # noqa: F401  (installs the popxl module aliases)

    return importlib.import_module(name)


def test_counts_match_the_reference_summary():
    assert len(NAMESPACES["popxl"]["all"]) == 57
    assert len(NAMESPACES["popxl.ops"]["all"]) == 128 and len(NAMESPACES["popxl.ops"]["also"]) == 3
    assert len(NAMESPACES["popxl.ops.collectives"]["all"]) == 11
    assert len(NAMESPACES["popxl.ops.var_updates"]["all"]) == 13
    assert len(NAMESPACES["popxl.transforms"]["all"]) == 7


@pytest.mark.skipif(not REFERENCE.exists(), reason=f"the reference inventory is not at {REFERENCE} "
                    "(shared/ beside the clone); the committed names file is checked on its own")
def test_names_file_is_up_to_date_with_the_reference():
    assert extract_api_names(REFERENCE.read_text()) == API, (
        "tests/data/popxl_api_names.json is stale: run `python tests/test_api_coverage.py`")


@pytest.mark.parametrize("module", API["modules"])
def test_submodule_imports(module):
    assert _module(module).__name__ in (module, f"workbench.{module}")  # the popxl face's own module


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_every_reference_name_exists(namespace):
    module = _module(namespace)
    expected = NAMESPACES[namespace]["all"] + NAMESPACES[namespace]["also"]
    missing = [name for name in expected if not hasattr(module, name)]
    assert not missing, f"{namespace} lacks {len(missing)} name(s): {', '.join(missing)}"


@pytest.mark.parametrize("namespace", ALL_LISTED)
def test_all_lists_exactly_the_reference_names(namespace):
    exported = set(_module(namespace).__all__)
    expected = set(NAMESPACES[namespace]["all"])
    missing, extra = sorted(expected - exported), sorted(exported - expected)
    assert not missing and not extra, (f"{namespace}.__all__ lacks: {', '.join(missing) or '-'}; "
                                       f"has names popxl does not list: {', '.join(extra) or '-'}")


def test_aliases_are_the_same_objects():
    import popxl
    import popxl.ops as ops

    assert ops.clamp is ops.clip and ops.rename is ops.identity
    assert popxl.gcg is popxl.get_current_graph and popxl.half is popxl.float16
