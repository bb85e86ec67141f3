"""Every HTML view in one import: `from viz.html import prompt_html, output_html, ...`.

The code lives in viz.chips (token chips) and viz.cards (fact cards); styles in viz.css.
"""

from .cards import neighbors_html, speed_html, step_html
from .chips import compare_html, output_html, prompt_html
from .css import CSS
from .sampling import survivors_html

__all__ = ["CSS", "compare_html", "neighbors_html", "output_html", "prompt_html", "speed_html",
           "step_html", "survivors_html"]
