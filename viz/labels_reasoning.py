"""Labels of the reasoning chapter (7), merged into viz.labels.LABELS."""

REASONING: dict[str, dict[str, str]] = {}
