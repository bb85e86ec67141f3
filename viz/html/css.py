"""Styles for the HTML that viz writes (chips, cards, tables). Pass `CSS` to `gr.Blocks(css=...)`.

Colours are explicit (dark text on pale chips) so the chips read the same in light and dark mode.
"""

CSS = """
.tbt { font-size: 16px; line-height: 1.35; color: #1f2430; }
.tbt .tbt-muted { color: #6b7280; font-size: 13px; }
.tbt-counts { display: flex; flex-wrap: wrap; gap: 18px; margin-bottom: 10px; color: inherit; }
.tbt-count b { font-size: 22px; }
.tbt-chips { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 4px 3px; }
.tbt-break { flex-basis: 100%; height: 0; }
.tbt-chip { display: inline-flex; flex-direction: column; align-items: center; padding: 3px 6px 2px;
  border-radius: 6px; border: 1px solid rgba(0,0,0,.12); color: #1f2430; cursor: pointer;
  font-family: 'JetBrains Mono', 'Noto Sans Mono', Menlo, Consolas, monospace; white-space: pre; }
.tbt-chip .tbt-id { font-size: 11px; color: #4b5563; margin-top: 1px; }
.tbt-chip:hover { outline: 2px solid #3a6fd8; }
.tbt-special { border: 1.5px dashed #6b7280; background: #eceef2 !important; color: #4b5563;
  font-style: italic; }
.tbt-selected { outline: 3px solid #e8842c !important; outline-offset: 1px; }
.tbt-ws { color: #9aa0aa; }
.tbt-group { display: inline-flex; flex-direction: column; align-items: center; padding: 2px 4px 3px;
  border: 1.5px solid #8a5cc9; border-radius: 8px; background: #faf7ff; }
.tbt-group .tbt-chars { font-size: 26px; line-height: 1.2; color: #1f2430; }
.tbt-group .tbt-pieces { display: flex; gap: 2px; }
.tbt-group .tbt-chip { font-size: 12px; }
.tbt-legend { margin-top: 10px; font-size: 13px; color: #6b7280; display: flex; flex-wrap: wrap;
  gap: 8px; align-items: center; }
.tbt-legend .tbt-chip, .tbt-legend .tbt-group { cursor: default; font-size: 12px; }
.tbt-legend .tbt-group .tbt-chars { font-size: 12px; }
.tbt-compare { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 16px; }  /* one above the other on a phone */
.tbt-compare-head { display: flex; gap: 14px; align-items: baseline; margin-bottom: 6px; }
.tbt-step { display: inline-block; padding: 1px 2px; margin: 1px 0; border-radius: 3px; cursor: pointer;
  color: #1f2430; white-space: pre-wrap; }
.tbt-step:hover { outline: 2px solid #3a6fd8; }
.tbt-output .tbt-chips { gap: 2px 1px; }
.tbt-joined { position: relative; text-decoration: underline dotted #8a5cc9; text-underline-offset: 4px; }
.tbt-joined .tbt-pieces { display: none; position: absolute; left: 0; top: 100%; z-index: 20; gap: 2px;
  padding: 3px; background: #fff; border: 1.5px solid #8a5cc9; border-radius: 6px; white-space: nowrap; }
.tbt-joined:hover .tbt-pieces, .tbt-joined:focus-within .tbt-pieces { display: flex; }
.tbt-joined-key { cursor: default; background: #f3f4f6; }
.tbt-tree-wrap { overflow-x: auto; }
.tbt-tree { display: grid; gap: 4px 1px; align-items: center; justify-content: start; }
.tbt-tree-label { grid-column: 1; cursor: pointer; padding: 2px 10px 2px 0; white-space: nowrap; font-size: 13px; }
.tbt-tree-shown, .tbt-tree-shown b { color: #c2410c; font-weight: 700; }
.tbt-tree-node { white-space: pre; }
.tbt-tree-fork { outline: 2px solid #e8842c; outline-offset: -1px; }
.tbt-tree-logp { padding-left: 10px; font-size: 13px; color: #4b5563; white-space: nowrap; cursor: pointer; }
.tbt-partial { font-family: Menlo, Consolas, monospace; font-size: 11px; color: #6b7280; }
.tbt-forced { border-bottom: 2px dashed #d0455b; }
.tbt-thinking { margin-bottom: 10px; padding: 6px 10px; border-left: 4px solid #8a5cc9;
  background: #f6f2fc; font-style: italic; opacity: .8; }
.tbt-answer .tbt-block-label { color: #3a6fd8; }
.tbt-block-label { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: #8a5cc9;
  font-style: normal; margin-bottom: 4px; }
.tbt-caret { display: inline-block; width: 9px; height: 1.1em; margin-left: 2px; background: #1f2430;
  vertical-align: text-bottom; animation: tbt-blink 1s steps(2, start) infinite; }
@keyframes tbt-blink { to { visibility: hidden; } }
.tbt-scale span { padding: 1px 6px; color: #1f2430; border-radius: 3px; }
.tbt-card-title { font-size: 18px; font-weight: 600; margin-bottom: 8px; }
.tbt-facts, .tbt-table { border-collapse: collapse; font-size: 15px; }
.tbt-facts th, .tbt-table th { text-align: left; font-weight: normal; color: #4b5563;
  padding: 3px 14px 3px 0; }
.tbt-facts td, .tbt-table td { padding: 3px 10px 3px 0; }
.tbt-num { text-align: right; font-variant-numeric: tabular-nums; }
.tbt-tok { font-family: 'JetBrains Mono', Menlo, Consolas, monospace; background: #eef2fb;
  padding: 1px 5px; border-radius: 4px; white-space: pre; }
.tbt-barcell { width: 120px; }
.tbt-bar { display: block; height: 10px; background: #3a6fd8; border-radius: 2px; }
.tbt-cards { display: grid; grid-template-columns: repeat(12, minmax(0, 1fr)); gap: 10px;
  container-type: inline-size; }       /* each card's span: HEAD_CSS */
.tbt-card { border: 1px solid #d9dde3; border-radius: 8px; padding: 10px 12px; background: #fff; }
.tbt-card-name { font-size: 14px; color: #4b5563; }
.tbt-card-value { font-size: 28px; font-weight: 600; font-variant-numeric: tabular-nums; line-height: 1.25; }
.tbt-qty { white-space: nowrap; }                /* a number and its unit never part */
.tbt-unit { font-size: .6em; font-weight: 400; color: #4b5563; }
.tbt-card-def { font-size: 13px; color: #6b7280; margin-top: 4px; }
.tbt-survivors ul { margin: 6px 0 10px 18px; }
.tbt-surv-chips { display: flex; flex-wrap: wrap; gap: 4px; }
.tbt-surv { display: inline-flex; gap: 5px; align-items: baseline; padding: 2px 7px; border-radius: 5px;
  font-family: 'JetBrains Mono', Menlo, Consolas, monospace; white-space: pre; background: #dce6fa;
  color: #1f2430; }
.tbt-surv small { font-size: 11px; color: #4b5563; }
.tbt-removed-k { background: #eceef2; color: #9aa0aa; text-decoration: line-through; }
.tbt-removed-p { background: #f1f2f4; color: #9aa0aa; border: 1px dashed #b9bec7; }
.tbt-chosen { outline: 2px solid #1f2430; }
.tbt-reasoning .tbt-badge { display: inline-block; font-size: 13px; padding: 2px 8px; border-radius: 10px;
  background: #f0eafa; color: #5b3a8c; margin-bottom: 8px; }
.tbt-reasoning summary { cursor: pointer; font-style: normal; color: #8a5cc9; font-size: 13px; }
.tbt-prose { white-space: pre-wrap; font-size: 16px; line-height: 1.45; }
.tbt-reasoning .tbt-thinking .tbt-prose { color: #5b5f6b; }
.tbt-forced-text { border-bottom: 2px dashed #9aa0aa; color: #6b7280; }
.tbt-note { font-size: 13px; color: #6b7280; margin-top: 6px; }
"""

# Rules that Gradio's `css=` cannot carry: it rewrites the page's stylesheet rule by rule and keeps
# only style, @media, @keyframes and @font-face rules, so a container query would be dropped. The
# app puts these in the page's <head> (app.py), where they apply as written.
# The speed cards: 12 columns, each card spanning 12 / (cards in its row), the rows balanced for
# the grid's own width (viz/html/cards.py cards_grid sets --span-wide/-mid/-narrow): 7 cards are 4 + 3
# or 3 + 2 + 2, never 6 + 1; on a phone, one card a row.
HEAD_CSS = """
.tbt-cards > .tbt-card { grid-column: span var(--span-wide, 3); min-width: 0; }
@container (max-width: 860px) { .tbt-cards > .tbt-card { grid-column: span var(--span-mid, 4); } }
@container (max-width: 420px) { .tbt-cards > .tbt-card { grid-column: span var(--span-narrow, 12); } }
.tbt-cards.tbt-cards-row > .tbt-card { grid-column: span 3; }
"""
