"""``popart._internal``: the Python side of PopART's C++ classes, as popxl and popxl-addons reach into it."""
