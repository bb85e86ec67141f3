"""Share a moment: links to a view, charts out as SVG/PNG, the walkthrough as an offline deck."""
