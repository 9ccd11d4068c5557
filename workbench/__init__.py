"""IPU Workbench: build, run and inspect popxl programs on a simulated IPU system."""
__version__ = "0.1.0"
