"""HTML views: token chips, fact cards, the branch tree, the sampling survivors, chapter 7's columns.

Every view the chapters use is importable from here (`from viz import html; html.prompt_html(...)`);
styles are in viz.html.css.
"""

from viz.html.cards import neighbors_html, speed_html, step_html
from viz.html.chips import compare_html, output_html, prompt_html
from viz.html.css import CSS
from viz.html.reasoning import reasoning_html
from viz.html.survivors import survivors_html

__all__ = ["CSS", "compare_html", "neighbors_html", "output_html", "prompt_html", "reasoning_html", "speed_html",
           "step_html", "survivors_html"]
