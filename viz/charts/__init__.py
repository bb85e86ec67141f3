"""Charts (Altair) and their tables, one module per chapter; theme.py is the page's Altair theme."""
