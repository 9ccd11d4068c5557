"""Every gradient rule in the op registry is exercised by some gradient check of tests/autodiff."""
from pathlib import Path

import pytest

from gradcheck import COVERED
from workbench.ops.registry import REGISTRY

HERE = Path(__file__).parent


def checking_files() -> list[str]:
    """The test files of this folder that run gradient checks."""
    return sorted(path.name for path in HERE.glob("test_*.py")
                  if path.name != Path(__file__).name and "gradcheck import" in path.read_text())


def test_every_gradient_rule_is_exercised():
    ran = set().union(*COVERED.values())
    not_run = [name for name in checking_files() if name not in ran]
    if not_run:
        pytest.skip(f"run all of tests/autodiff to measure coverage; no check of {', '.join(not_run)} ran")
    with_rules = {op_type for op_type, definition in REGISTRY.items() if definition.grad is not None}
    missing = sorted(with_rules - set(COVERED))
    assert not missing, ("op types whose gradient rule no gradient check exercised (add a check_gradients "
                         f"test through them): {', '.join(missing)}")
