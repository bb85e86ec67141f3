"""The Trace file tab: the run on show as a JSON file to download, and a visitor's file to show in
every chapter (read as data only, size-capped and checked field against field: ui/host/uploads.py)."""

from __future__ import annotations

from html import escape
from pathlib import Path

import gradio as gr

from engine.schema.branches import ROOT
from engine.schema.specs import short_name
from viz.fmt import device_name

from ui.chapters.run import status_md
from ui.host.uploads import read_upload
from ui.page.i18n import t, text


class TraceFile:
    def __init__(self, models):
        self.models = models
        self.download = gr.File(label=t("download"), interactive=False, elem_id="download")
        # no file_types: the browser's own type check refuses a .txt with an English toast and a red
        # "Error" on the box; every file goes to the validator instead, refused in one plain sentence
        self.upload = gr.File(label=t("upload"), type="filepath", elem_id="upload")

    def check(self, path, lang) -> dict:
        """The upload's validator: a file that is not a usable trace is refused on the upload box
        itself, in the page's language, before anything changes (ui/host/uploads.py says why)."""
        try:
            read_upload(path, self.models.limits, lang, plain=True)
        except gr.Error as exc:
            return {self.upload: gr.validate(False, exc.message)}
        return {self.upload: gr.validate(True, "")}

    def wire(self, explore) -> None:
        """The file goes on show in every chapter: the trace, a status line that says a file is on
        show (its name, model, when and where it was recorded, then its figures), its prompt in the box."""
        models = self.models

        def load(path, lang) -> dict:
            trace = read_upload(path, models.limits, lang, plain=True)
            return {explore.trace: trace, explore.prompt: trace.prompt.raw, explore.tree: trace, explore.branch: ROOT}

        def banner(path, trace, lang) -> str:
            """After the views are drawn (they write the run's status line): the file's name above it."""
            said = text("viewing_file", lang).format(
                name=escape(Path(path).name), model=escape(short_name(trace.model.id)), date=escape(trace.created[:10]),
                device=escape(device_name(trace.model.device)))
            return f"{said}  \n{status_md(trace, lang)}"
        self.upload.upload(load, [self.upload, explore.lang], {explore.trace, explore.prompt, explore.tree, explore.branch},
                           validator=self.check, api_visibility="private").success(
            explore.render_all, explore.render_inputs, explore.views, api_visibility="private").success(
            banner, [self.upload, explore.trace, explore.lang], explore.status, api_visibility="private")
