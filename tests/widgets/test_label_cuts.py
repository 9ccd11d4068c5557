"""Labels cut where a picture has no room for them keep what tells their node apart: a tensor's name its end (its
last scopes whole where they fit) and a gradient's mark, an op's caption its type and whole words, a group's name its end (``test_picture_wrapping``)."""
from picture_cases import open_every_group, transformer_backward
from workbench.analysis.gradient_names import GRADIENT_MARK
from workbench.widgets import GraphView
from workbench.widgets.figures.picture_labels import tensor_label
from workbench.widgets.style import fitted_name, fitted_words


def test_a_tensor_name_keeps_its_last_scopes_whole_where_they_fit():
    assert fitted_name("layer5/feed_forward/add", 18) == "…/feed_forward/add"
    assert fitted_name("layer5/feed_forward/add", 10) == "layer…/add"  # "…/add" alone would say too little
    assert fitted_name("layer5/feed_forward/add", 30) == "layer5/feed_forward/add"


def test_a_tensor_name_without_scopes_is_cut_in_its_middle_keeping_its_number():
    assert fitted_name("Gradient___ws_12", 10) == "Gradi…s_12"
    assert len(fitted_name("Gradient___ws_12", 10)) == 10


def test_a_gradient_name_keeps_its_mark_before_its_end():
    gelu = GRADIENT_MARK + "layer3/feed_forward/gelu"
    assert tensor_label(gelu, 22) == GRADIENT_MARK + "…/feed_forward/gelu"
    assert tensor_label(gelu, 10) == GRADIENT_MARK + "…/gelu"
    assert tensor_label(gelu, 5) == GRADIENT_MARK + "la…"  # too little room for its end: its start
    assert tensor_label(gelu, 30) == gelu
    assert tensor_label("layer3/feed_forward/gelu", 19) == "…/feed_forward/gelu"  # no mark, as fitted_name


def test_every_cut_gradient_label_of_a_real_backward_graph_keeps_its_mark():
    """The transformer's backward graph, every tensor and every group open, in a 630-px output: many of its
    gradients' names are cut, each after its mark."""
    ir, graph = transformer_backward()
    view = GraphView(ir, graph=graph, detail="full", grouped="auto", live=False)
    view.fit(630)
    open_every_group(view)
    cut = [text for trace in view.figure.data if trace.mode == "markers+text"
           for text, hover in zip(trace.text, trace.hovertext)
           if text and "…" in text and hover.startswith("<b>" + GRADIENT_MARK)]
    assert len(cut) >= 10
    assert all(text.startswith(GRADIENT_MARK) for text in cut), cut


def test_an_op_caption_is_cut_after_its_last_whole_word():
    assert fitted_words("transpose (1,0,2)", 12) == "transpose…"
    assert fitted_words("ipu_copy → IPU 1", 10) == "ipu_copy…"
    assert fitted_words("mul · t ⟨scalar⟩", 6) == "mul…"
    assert fitted_words("matmul", 6) == "matmul"
    assert fitted_words("batch_norm_inference eps=1e-05", 12) == "batch_norm_…"  # one word longer than the room
