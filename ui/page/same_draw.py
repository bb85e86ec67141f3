"""Draws that every visitor gets alike, made once: the chapters and walkthrough steps drawn from the
recordings in one language, before a visitor has run anything (each page's first draw).

A first draw built the same ~60 charts for every visitor who opened the page: ~0.6 s of the
server's CPU a page load (half of it Altair building and serialising specs). Kept here, the
views are handed out as they would leave the server: an Altair chart as the spec the page gets
(ui/page/plot.sent, the same the chart box sends), an update dict as a copy of its own (Gradio
pops its value while sending it). Only what is the same for every visitor may be kept: the caller
names everything a draw depends on in its key, and keeps none until its model is loaded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from ui.page.plot import is_altair, sent

KEPT = 8        # draws kept: two languages, with and without presenter mode, a second model's


class SameDraws:
    """{key: views}, the `KEPT` latest used; views are a list or a {component: value} dict."""

    def __init__(self, kept: int = KEPT):
        self.kept = kept
        self.draws: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable, draw: Callable[[], list | dict]) -> list | dict:
        """The views `draw()` makes, made once for `key` (drawn anew when `key` cannot be hashed)."""
        try:
            hash(key)
        except TypeError:
            return draw()
        with self.lock:
            views = self.draws.get(key)
            if views is not None:
                self.draws.move_to_end(key)          # the latest used are kept
        if views is None:
            views = draw()
            views = ({k: ready(v) for k, v in views.items()} if isinstance(views, dict)
                     else [ready(v) for v in views])
            with self.lock:
                self.draws[key] = views
                while len(self.draws) > self.kept:
                    self.draws.popitem(last=False)
        return {k: handed(v) for k, v in views.items()} if isinstance(views, dict) else [handed(v) for v in views]


def ready(value):
    """A view as it leaves the server, where that does not depend on the visitor."""
    return sent(value) if is_altair(value) else value


def handed(value):
    """A kept view for one visitor: an update dict its own copy (Gradio pops its value)."""
    return dict(value) if isinstance(value, dict) else value
