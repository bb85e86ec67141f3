"""Pure views of a Trace: Altair charts, HTML strings and small tables. No torch, no Gradio.

Import the module you need (`viz.attention`, `viz.decode`, `viz.kv`, `viz.speed`, `viz.sampling`,
`viz.chips`, `viz.cards`); importing the package only registers the projector-friendly chart theme.
"""

from . import theme  # noqa: F401  (registers and enables the Altair theme)
