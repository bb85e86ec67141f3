"""Labels of the acceleration lab (chapter 6), merged into viz.labels.LABELS."""

LAB: dict[str, dict[str, str]] = {}
