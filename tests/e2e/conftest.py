"""Everything under tests/e2e is an e2e test (marker `e2e`), whether or not it asks for
the `k8s` fixture itself (some start their own throwaway control plane), so
`pytest -m "not e2e"` skips this whole directory."""

from __future__ import annotations

from pathlib import Path

import pytest

E2E_DIR = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items, not only this directory's.
    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)
