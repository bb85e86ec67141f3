"""Re-record the walkthrough's traces (assets/traces/) with our own CLI: `make traces`."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "assets" / "traces"


def main() -> int:
    manifest = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))
    for name, args in manifest["traces"].items():
        print(f"recording {name}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "engine", "trace", *args, "--out", str(FOLDER / name)],
                       cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
