"""The tutorials form a numbered series, each titled, stored executed top to bottom without errors on
the python3 kernel that nbval uses, with its pictures saved and no cell left out of nbval's checks."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
NAME = re.compile(r"(\d\d)_[a-z0-9]+(_[a-z0-9]+)*\.ipynb")
PICTURES = ("application/vnd.plotly.v1+json", "application/vnd.ipu-workbench.ir+json")
MAX_BYTES = 400_000


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(notebook: dict) -> list:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_the_series_is_numbered_from_01_without_gaps():
    assert NOTEBOOKS
    numbers = []
    for path in NOTEBOOKS:
        match = NAME.fullmatch(path.name)
        assert match, f"{path.name}: expected a name like 01_building_an_ir.ipynb"
        numbers.append(int(match.group(1)))
    assert numbers == list(range(1, len(NOTEBOOKS) + 1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_tutorial_opens_with_its_numbered_title(path):
    first = load(path)["cells"][0]
    assert first["cell_type"] == "markdown"
    title = "".join(first["source"]).splitlines()[0]
    assert re.fullmatch(rf"# {int(path.name[:2])}\. \S.*", title), title


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_tutorial_is_stored_executed_in_order(path):
    notebook = load(path)
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    code = code_cells(notebook)
    assert [cell["execution_count"] for cell in code] == list(range(1, len(code) + 1))
    assert any(cell["outputs"] for cell in code)
    errors = [o for cell in code for o in cell["outputs"] if o["output_type"] == "error"]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_tutorial_shows_pictures_that_need_no_kernel(path):
    outputs = [o for cell in code_cells(load(path)) for o in cell["outputs"]]
    assert any(mime in o.get("data", {}) for o in outputs for mime in PICTURES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_checks_every_cell(path):
    """Outputs that differ between runs are ignored cell by cell; no cell or notebook is skipped."""
    notebook = load(path)
    assert "nbval" not in notebook["metadata"]
    for cell in code_cells(notebook):
        source = "".join(cell["source"])
        assert "NBVAL_SKIP" not in source and "NBVAL_RAISES_EXCEPTION" not in source
        assert not {"nbval-skip", "raises-exception"} & set(cell["metadata"].get("tags", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_tutorial_stays_small_without_saved_widget_state(path):
    assert "widgets" not in load(path)["metadata"]
    assert path.stat().st_size < MAX_BYTES
