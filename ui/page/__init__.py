"""The page's frame: its words (i18n), its typeface, the header and the share bar."""
