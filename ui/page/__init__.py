"""The page's frame: its words (i18n), its typeface, the header and the share bar."""

# Hides a component that comes and goes (assets/page.css) without unmounting it. Gradio unmounts a
# component set `visible=False`; one unmounted while an event has it pending keeps its status
# tracker's animation-frame loop running for good (Gradio 6.31), each redrawing the page 60 times a
# second: the stale banner, hidden at the end of every run, left one more loop a run; the share bar's
# files were hidden so at every chapter switch.
HIDDEN = "tbt-hidden"
