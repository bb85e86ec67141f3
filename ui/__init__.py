"""Glue between the Gradio page (app.py) and engine/ + viz/, in rooms:

    host/         what the house keeps for every visitor: the models, runs (Stop flags, client slots,
                  files for download), uploads, errors (refusals in the page's language), ZeroGPU,
                  and recordings (everything read from assets/)
    page/         the page's frame: i18n, fonts, the header, the share bar
    chapters/     Explore and its chapters: each chapter's layout, handlers and view
    walkthrough/  the walkthrough's steps (one table, used by the tab and the deck) and its tab
    share/        links to a view, charts out, the offline deck
    api/          the documented API, one file per endpoint

A room imports only rooms above it in this list (tests/unit/test_boundaries.py checks it).
"""
