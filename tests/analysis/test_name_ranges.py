"""name_ranges: names alike but for their numbers, written once with the numbers gathered."""
from workbench.analysis.name_ranges import gathered_endings, name_ranges


def test_a_transformers_weights_are_named_in_four_parts_that_hold_all_twenty_four():
    names = [f"layer{layer}.{kind}" for layer in range(6) for kind in ("qkv", "proj", "ff1", "ff2")]
    assert name_ranges(names) == ["layer{0–5}.qkv", "layer{0–5}.proj", "layer{0–5}.ff1", "layer{0–5}.ff2"]


def test_a_hundred_blocks_are_one_range_and_gaps_split_runs():
    assert name_ranges([f"block{n}/w" for n in range(100)]) == ["block{0–99}/w"]
    assert name_ranges(["x0", "x1", "x2", "x7", "x9"]) == ["x{0–2,7,9}"]
    assert name_ranges(["y3", "y4"]) == ["y3", "y4"]  # two are written apart


def test_names_keep_their_first_order_and_numbers_that_vary_together_stay_apart():
    assert name_ranges(["w", "v", "w", "a1b2", "a1b3", "a2b2"]) == ["w", "v", "a1b2", "a1b3", "a2b2"]


def test_numbers_written_with_a_leading_zero_are_kept_as_written():
    assert name_ranges(["w007", "w008", "w9"]) == ["w007", "w008", "w9"]


def test_names_alike_but_for_their_last_part_write_it_once_in_braces():
    names = name_ranges([f"layer{i}.{part}" for i in range(6) for part in ("qkv", "proj", "ff1", "ff2")])
    assert gathered_endings(names) == ["layer{0–5}.{qkv,proj,ff1,ff2}"]
    assert gathered_endings(["a/w", "b/w", "a/b", "x", "c.{1,2}"]) == ["a/{w,b}", "b/w", "x", "c.{1,2}"]
