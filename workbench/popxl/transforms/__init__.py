"""popxl.transforms: IR-to-IR passes."""
