"""Screenshots of every Explore chapter and every walkthrough step, for looking at a change.

    .venv/bin/python scripts/screens.py --out test-output/screens [--lang en|zh] [--width 1280 --height 900]
                                        [--url http://127.0.0.1:7860] [--phone] [--no-walkthrough]

Without --url it starts the app as `make run` does (TBT_COMPILE=0: no back-room build), on a free
port, and stops it at the end. The page opens on the recordings (no run is made), so the pictures
are of what a first visitor sees. Files: explore-<lang>-<n>-<chapter>.png, walkthrough-<lang>-<n>.png.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.servers import app_server  # noqa: E402
from viz.text.strings import LANGS  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def chapter_tabs(page) -> list[str]:
    """The Explore chapters' tab labels, in order (they wrap on a phone: every one is a visible tab)."""
    return page.evaluate("""() => [...document.querySelectorAll('#explore-chapters [role=tab]')]
                               .map((b) => b.innerText.trim()).filter((t) => t)""")


def shoot(url: str, out: Path, lang: str, width: int, height: int, phone: bool, walkthrough: bool = True) -> list[Path]:
    from playwright.sync_api import sync_playwright
    locale = {"en": "en-US", "zh": "zh-CN"}[lang]          # the browser's tag for each of LANGS
    made = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(locale=locale, viewport={"width": width, "height": height},
                                          is_mobile=phone, has_touch=phone)
            page = context.new_page()
            page.goto(url)
            page.wait_for_selector("#output .tbt-recording", timeout=120_000)
            page.wait_for_function("() => !document.querySelector('.pending')", timeout=60_000)
            for n, name in enumerate(chapter_tabs(page), 1):
                tab = page.locator("#explore-chapters [role=tab]", has_text=name).first
                if not tab.is_visible():        # the page hides a chapter: say so, and go on
                    print(f"chapter tab not visible: {name}", file=sys.stderr)
                    continue
                tab.click()
                page.wait_for_timeout(1500)     # charts draw after the tab shows (a picture, not a test)
                path = out / f"explore-{lang}-{n}-{name.split('·')[-1].strip().replace(' ', '_')}.png"
                page.screenshot(path=str(path), full_page=True)
                made.append(path)
                projection = page.locator("#kv-projection")
                if projection.count() and projection.first.is_visible():     # chapter 3's projection alone
                    path = out / f"explore-{lang}-{n}-projection.png"
                    projection.first.screenshot(path=str(path))
                    made.append(path)
            page.get_by_role("tab", name={"en": "Walkthrough", "zh": "导览"}[lang]).first.click()
            steps = page.locator('[id^="wt-step-"]').count() if walkthrough else 0
            for i in range(steps):
                page.wait_for_selector(f"#wt-step-{i}", state="visible", timeout=10_000)
                page.wait_for_timeout(1200)
                path = out / f"walkthrough-{lang}-{i + 1}.png"
                page.screenshot(path=str(path), full_page=True)
                made.append(path)
                nxt = page.locator(f"#wt-step-{i} .tbt-next")
                if i < steps - 1 and nxt.count():
                    nxt.first.click()
        finally:
            browser.close()
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="test-output/screens")
    parser.add_argument("--lang", choices=LANGS, action="append")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--phone", action="store_true", help="390x844, touch")
    parser.add_argument("--url", default=None, help="an app already running (else one is started)")
    parser.add_argument("--no-walkthrough", action="store_true", help="the Explore chapters only")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    width, height = (390, 844) if args.phone else (args.width, args.height)
    langs = args.lang or list(LANGS)

    def run(url: str) -> None:
        for lang in langs:
            for path in shoot(url, out, lang, width, height, args.phone, not args.no_walkthrough):
                print(path)

    if args.url:
        run(args.url)
        return
    env = {**os.environ, "TBT_COMPILE": "0"}
    with app_server("screens", env) as (_proc, url):
        run(url)


if __name__ == "__main__":
    main()
