"""In a notebook the progress bar of a long run is a widget, shown in the cell that ran it."""
import nbformat
from nbclient import NotebookClient

WIDGET = "application/vnd.jupyter.widget-view+json"

CELLS = [
    """
import numpy as np
import popxl
import popxl.ops as ops
from workbench.runtime import ProgressOptions, RunOptions

ir = popxl.Ir()
with ir.main_graph:
    w = popxl.variable(np.zeros(2, np.float32), name="w")
    body = ir.create_graph(lambda x: x + 1, w.spec)
    ops.var_updates.copy_var_update_(w, ops.repeat(body, 30, w)[0])
session = popxl.Session(ir, "ipu_model", options=RunOptions(progress=ProgressOptions(delay_seconds=0.0)))
""",
    "with session:\n    session.run()",
    "session.progress = False\nwith session:\n    session.run()",
]


def test_a_long_run_in_a_notebook_shows_a_widget_bar_in_its_cell():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    NotebookClient(notebook, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    building, running, quiet = notebook.cells
    assert not any(WIDGET in output.get("data", {}) for output in building.outputs)
    assert [output for output in running.outputs if WIDGET in output.get("data", {})]
    states = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"].values()
    bars = [state["state"] for state in states if state["model_name"] in ("IntProgressModel", "FloatProgressModel")]
    assert [(bar["value"], bar["max"]) for bar in bars] == [(30, 30)]
    assert quiet.outputs == []
