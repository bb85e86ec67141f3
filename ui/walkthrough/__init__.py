"""The walkthrough: its steps as one table (used by the tab and the offline deck) and the tab."""
