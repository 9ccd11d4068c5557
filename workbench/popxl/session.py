"""popxl.session."""
from workbench.runtime.session import Session
