"""ui/host/idle.py: the app's queue looks for events every 20 ms when it has none, not every 1 ms
(Gradio's default: 8 % of a core for an idle app here)."""

import gradio as gr

from ui.host.idle import IDLE_POLL_S, quiet_when_idle


def test_the_queue_polls_less_often_when_idle():
    with gr.Blocks() as demo:
        gr.Markdown("x")
    demo.queue()
    assert demo._queue.sleep_when_free < IDLE_POLL_S         # Gradio's own: if this changes, look again
    quiet_when_idle(demo)
    assert demo._queue.sleep_when_free == IDLE_POLL_S


def test_a_gradio_without_the_attribute_is_left_alone():
    class Bare:
        pass
    quiet_when_idle(Bare())                                  # no queue: nothing to do, no error
