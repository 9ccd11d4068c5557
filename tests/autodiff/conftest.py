"""The gradient coverage test runs last, after every gradient check of the session has been recorded."""


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.nodeid.split("::")[0].endswith("test_grad_coverage.py"))
