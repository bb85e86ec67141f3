"""Where things are, for every kind of test (tests/unit, engine, app, browser) and the load script."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent       # the repository
FIXTURES = ROOT / "tests" / "fixtures"               # shared test data
OUTPUT = ROOT / "test-output"                        # logs, screenshots, downloads
