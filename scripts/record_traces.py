"""Re-record the walkthrough's traces (assets/traces/), their profiles (assets/profile/) and the serving
floor's workload (assets/floor/) with our own CLI:
`make traces`."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "assets" / "traces"
PROFILES = ROOT / "assets" / "profile"
LAB = ROOT / "assets" / "lab" / "recorded.json"


def main() -> int:
    manifest = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))
    for name, args in manifest["traces"].items():
        print(f"recording {name}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "engine", "trace", *args, "--out", str(FOLDER / name)],
                       cwd=ROOT, check=True)
    # the Speed chapter's profile before any run: each "next" recording's prefill and middle decode step,
    # on the recorded lab's bandwidth and FLOP/s where that was measured on this host (one measurement
    # per host, engine/lab/host.py: the walkthrough's floors then agree); record the lab first
    # (`python -m engine lab --json > assets/lab/recorded.json`)
    PROFILES.mkdir(exist_ok=True)
    for name in manifest["traces"]:
        if name.endswith("-next.json"):
            print(f"profiling {name}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "engine", "profile", "--trace", str(FOLDER / name), "--project",
                            "--machine", str(LAB), "--json", "--out", str(PROFILES / name)],
                           cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    # the serving floor's workload before any run (chapter 9): the defaults, served three ways
    print("serving the floor's workload", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "engine", "floor", "--json", "--out", str(ROOT / "assets" / "floor" / "recorded.json")],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
