"""The extension's grouped model view on a real model (ResNet-50 through PopART): it opens on the groups the
export laid out, draws them with arrowheads and a legend, opens a group on click and goes back by the
breadcrumb; an attribute nested 5,000 deep is previewed without overflowing the stack."""
import json
import re

from real_programs import resnet50_session
from test_documents import run_node_tests
from workbench.export.mime import MIME_TYPE


def test_the_extension_draws_and_opens_the_grouped_pictures_of_resnet50(tmp_path):
    ir = resnet50_session()._workbench_source()
    path = tmp_path / "resnet50.ir.json"
    path.write_text(json.dumps(ir._repr_mimebundle_()[0][MIME_TYPE]), encoding="utf-8")
    out = run_node_tests({"IPU_WB_GROUPED": str(path)}, "test/grouped.test.mjs")
    for name in ("a document with grouped pictures opens on them, drawn as laid out",
                 "clicking a group opens it, the breadcrumb goes back up",
                 "pointing at an op shows its details",
                 "an attribute nested 5,000 deep shows as a short preview, with no stack overflow"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name
