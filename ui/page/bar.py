"""The share bar of one place (Explore or the walkthrough): copy a link, download the charts or the
deck, and the boxes they fill. Laid out here; what the buttons do is wired by ui/share/links.py."""

from __future__ import annotations

import gradio as gr

from ui.page import HIDDEN
from ui.page.i18n import t


class Bar:
    """The controls of one place (Explore or the walkthrough): copy a link, download, and what they fill.
    The buttons go where the bar is made (a row of their own, or the row the caller is in); the
    boxes they fill, where `boxes()` is called."""

    def __init__(self, where: str):
        self.where = where
        self.link_btn = gr.Button(t(f"share_link_{where}"), size="sm", elem_id=f"share-{where}")
        self.export_btn = (gr.Button(t("share_export"), size="sm", elem_id="export-charts")
                           if where == "explore" else None)
        self.deck_btn = gr.Button(t(f"share_deck_{where}"), size="sm", elem_id=f"deck-{where}")

    def boxes(self) -> Bar:
        where = self.where
        self.link = gr.Textbox(label=t("share_link_box"), visible=False, interactive=False, buttons=["copy"],
                               elem_id=f"share-link-{where}")
        self.files = gr.File(label=t("share_files"), file_count="multiple", elem_classes=[HIDDEN], interactive=False,
                             elem_id=f"share-files-{where}")      # hidden but mounted (ui/page HIDDEN)
        self.page = gr.Textbox(visible=False)           # filled by PAGE_JS: the page's address
        self.step = gr.Number(visible=False, precision=0)   # filled by PAGE_JS: the walkthrough step on screen
        return self


def explore_bar() -> Bar:
    """Explore's bar: a row of buttons above the chapters, the boxes under it."""
    with gr.Row(elem_classes="tbt-share"):
        bar = Bar("explore")
    return bar.boxes()


def walkthrough_bar() -> Bar:
    """The walkthrough's buttons, in the row the caller is in (beside "Run live": no height taken
    from a projector's step); call `.boxes()` after that row."""
    return Bar("walkthrough")
