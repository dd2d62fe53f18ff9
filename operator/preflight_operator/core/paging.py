"""Bounded list paging: which page to ask for next (pure; api.py reads, this decides).

Why (issue 34): a listing is bounded by the object, never by the page. A page over its
bounds (decoding.LIST_PAGE_MAX_BYTES, PAGE_MAX_ITEMS) was refused whole, so no listing of
a namespace with a few large objects could ever finish: 4 pods of 1 MB (a 4.2 MB page)
took every restart of the operator down, and so did 170 GPUValidations of 27 KB. Now:

* a page over the bounds is read again from the same continue token with a quarter of the
  limit, down to one object;
* one object alone over the bounds is set aside by the name the page's head gives
  (decoding.list_head; the caller counts it, logs it once and tells ``rejected``), and the
  list goes on from the continue token the head gives too;
* after each page that was read, the limit doubles back towards the page size asked for.

So no tenant's objects can make a listing fail. api.py's ``KubeApi.list_pages`` makes the
calls and follows what a :class:`ListPaging` decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight_operator.core.decoding import ListHead, Rejection, list_head


class ListPaging:
    """Where one listing stands: the limit and continue token of its next page."""

    def __init__(self, params: Mapping[str, str] | None, page: int) -> None:
        self._params = dict(params or {})
        self._page = page
        self.limit = page
        self.token = ""
        self.done = False

    def query(self) -> dict[str, str]:
        """The next page's query: the caller's parameters, the limit, the continue token."""
        token = {"continue": self.token} if self.token else {}
        return {**self._params, "limit": str(self.limit), **token}

    def read(self, meta: Mapping[str, Any]) -> None:
        """A page was read (``meta``: its ListMeta): go on from its continue token (done
        without one), the limit doubling back towards the page size."""
        self.token = str(meta.get("continue") or "")
        self.done = not self.token
        self.limit = min(self._page, self.limit * 2)

    def smaller(self) -> bool:
        """A page was refused: True when it is to be read again from the same continue
        token with a quarter of the limit; False when it held one object already."""
        if self.limit <= 1:
            return False
        self.limit = max(1, self.limit // 4)
        return True

    def set_aside(self, head: bytes, source: str, rejection: Rejection) -> ListHead | None:
        """A page of one object was refused (``rejection``; ``head``: the start of its
        body): what its head says (the object to set aside, the list's resourceVersion),
        going on from the continue token it gives (done without one). None when the head
        names nothing: the page cannot be skipped, and the listing fails."""
        found = list_head(head, source, rejection.reason, rejection.detail)
        if found is not None:
            self.token = found.continue_token
            self.done = not self.token
        return found
