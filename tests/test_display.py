"""The IR displays through functions that export/ installs (ir/ cannot import it)."""
import pytest

import popxl
from workbench.export.mime import MIME_TYPE
from workbench.ir import display


def test_an_ir_and_its_graphs_display_through_the_installed_bundles():
    ir = popxl.Ir()
    data, metadata = ir.main_graph._repr_mimebundle_()
    assert MIME_TYPE in data and metadata[MIME_TYPE]["graph"] == ir.main_graph.id


def test_asking_for_what_nothing_installed_names_it():
    with pytest.raises(RuntimeError, match="nothing shows 'flame_graph': import workbench.export to install it"):
        display.present("flame_graph", popxl.Ir())
