"""Labels cut where a picture has no room for them keep what tells their node apart: a tensor's name its end (its
last scopes whole where they fit), an op's caption its type and whole words, a group's name its end (``test_picture_wrapping``)."""
from workbench.widgets.style import fitted_name, fitted_words


def test_a_tensor_name_keeps_its_last_scopes_whole_where_they_fit():
    assert fitted_name("layer5/feed_forward/add", 18) == "…/feed_forward/add"
    assert fitted_name("layer5/feed_forward/add", 10) == "layer…/add"  # "…/add" alone would say too little
    assert fitted_name("layer5/feed_forward/add", 30) == "layer5/feed_forward/add"


def test_a_tensor_name_without_scopes_is_cut_in_its_middle_keeping_its_number():
    assert fitted_name("Gradient___ws_12", 10) == "Gradi…s_12"
    assert len(fitted_name("Gradient___ws_12", 10)) == 10


def test_an_op_caption_is_cut_after_its_last_whole_word():
    assert fitted_words("transpose (1,0,2)", 12) == "transpose…"
    assert fitted_words("ipu_copy → IPU 1", 10) == "ipu_copy…"
    assert fitted_words("mul · t ⟨scalar⟩", 6) == "mul…"
    assert fitted_words("matmul", 6) == "matmul"
    assert fitted_words("batch_norm_inference eps=1e-05", 12) == "batch_norm_…"  # one word longer than the room
