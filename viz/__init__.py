"""Pure views of a Trace: Altair charts, HTML strings and small tables. No torch, no Gradio.

By kind: viz.charts (one module per chapter's charts and tables, and the theme), viz.html (chips,
cards, tree, survivors), viz.text (the string catalogue, labels, verdicts, facts), viz.out (charts as
SVG/PNG, slides, the offline deck). viz.frames is the one module that knows the Trace's shape;
viz.fmt holds the small formatters. Importing the package only registers the projector-friendly
chart theme.
"""

from viz.charts import theme  # noqa: F401  (registers and enables the Altair theme)
