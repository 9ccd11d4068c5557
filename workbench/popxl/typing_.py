"""popxl.typing_."""
from typing import NewType as NewAliasAnnotation
