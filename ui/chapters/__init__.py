"""Explore and its chapters: one file per chapter, holding its layout, handlers and view."""
