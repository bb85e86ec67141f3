"""Token by Token: watch a real language model run, one stage of inference at a time.

Layout and event wiring only; the work happens in engine/ (model), viz/ (charts) and ui/ (glue).
    python app.py [--model ID] [--host H] [--port P] [--share]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

import gradio as gr

from engine import Engine
from ui import reasoning_tab
from ui.actions import Actions
from ui.runs import ENGINE_CONCURRENCY
from viz import html
from viz.css import CSS
from ui.views import (decode_view, head_choices, kv_view, prefill_view, sampling_view, speed_view,
                      tokens_view)

ASSETS = Path(__file__).parent / "assets"
CLICK_JS = """
element.addEventListener('click', (e) => {
  const chip = e.target.closest('[data-index],[data-step]');
  if (!chip) return;
  const index = Number(chip.dataset.index ?? chip.dataset.step);
  trigger('click', {index: index});
});
"""


def model_line(engine: Engine) -> str:
    i = engine.info
    quant = f" · {i.quantization}" if i.quantization else ""
    return (f"**Model** `{i.id}` ({i.architecture}, {i.parameters / 1e6:.0f}M parameters, {i.layers} layers, "
            f"{i.heads} heads / {i.kv_heads} KV heads){quant} · **{i.dtype}** on **{i.device}** · "
            f"attention kernel **{i.attn_implementation}**")


def build(engine: Engine) -> gr.Blocks:
    actions = Actions(engine)
    info, limits = engine.info, engine.limits
    examples = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))

    with gr.Blocks(title="Token by Token", delete_cache=(1800, 3600)) as demo:
        trace = gr.State(None)
        lang = gr.State("en")
        selected_token = gr.State(0)
        gr.Markdown("# Token by Token\nWhat happens between pressing *send* and reading the answer, "
                    "measured on a real model.")
        gr.Markdown(model_line(engine), elem_id="model-line")

        with gr.Row():
            with gr.Column(scale=2):
                prompt = gr.Textbox(label="Prompt", lines=3, max_lines=12, elem_id="prompt",
                                    info=f"up to {limits.max_prompt_chars:,} characters / "
                                         f"{limits.max_prompt_tokens:,} tokens")
                gr.Examples(examples=examples, inputs=prompt, label="Examples")
                with gr.Row():
                    run_btn = gr.Button("Run", variant="primary", elem_id="run")
                    stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
                with gr.Accordion("Generation settings", open=False):
                    max_new = gr.Slider(1, limits.max_new_tokens, value=48, step=1, label="Max new tokens")
                    temperature = gr.Slider(0, 2, value=0, step=0.05, label="Temperature (0 = greedy)")
                    top_k = gr.Slider(0, 200, value=0, step=1, label="Top-k (0 = off)")
                    top_p = gr.Slider(0.01, 1, value=1, step=0.01, label="Top-p (1 = off)")
                    seed = gr.Number(value=0, precision=0, label="Seed", minimum=0)
                    with gr.Row():
                        attention_on = gr.Checkbox(value=True, label="Capture attention")
                        lens_on = gr.Checkbox(value=True, label="Logit lens")
                        template_on = gr.Checkbox(value=True, label="Chat template")
            with gr.Column(scale=3):
                output = gr.HTML(elem_id="output", js_on_load=CLICK_JS)
                status = gr.Markdown(elem_id="status")

        with gr.Tabs():
            with gr.Tab("1 · Tokens", id="tokens"):
                prompt_chips = gr.HTML(elem_id="prompt-chips", js_on_load=CLICK_JS)
                compare = gr.HTML(elem_id="compare")
                with gr.Row():
                    embedding_plot = gr.Plot(label="Embedding vector", show_label=False, elem_id="embedding")
                    neighbors = gr.HTML(elem_id="neighbors")
            with gr.Tab("2 · Prefill", id="prefill"):
                prefill_facts = gr.Markdown(elem_id="prefill-facts")
                with gr.Row():
                    layer = gr.Slider(0, info.layers - 1, value=0, step=1, label="Layer", elem_id="prefill-layer")
                    head = gr.Dropdown(head_choices(info.heads), value="average", label="Head")
                    query = gr.Slider(0, 255, value=0, step=1, label="Query token (head view)")
                heatmap = gr.Plot(label="Attention map", show_label=False, elem_id="heatmap")
                head_view = gr.Plot(label="Head view", show_label=False, elem_id="head-view")
            with gr.Tab("3 · KV cache", id="kv"):
                kv_plot = gr.Plot(label="KV cache size, measured per step", show_label=False, elem_id="kv-growth")
                projection_plot = gr.Plot(label="Projection for larger models", show_label=False, elem_id="kv-projection")
                projection_table = gr.Dataframe(label="Projection (formula, not measured)", interactive=False)
            with gr.Tab("4 · Decode", id="decode"):
                step = gr.Slider(0, 1, value=0, step=1, label="Decode step", elem_id="step")
                step_facts = gr.HTML(elem_id="step-facts")
                candidates = gr.Plot(label="Top candidates", show_label=False, elem_id="candidates")
                with gr.Row():
                    d_layer = gr.Slider(0, info.layers - 1, value=info.layers - 1, step=1, label="Layer")
                    d_head = gr.Dropdown(head_choices(info.heads), value="average", label="Head")
                attention_row = gr.Plot(label="Attention of this step over the cache", show_label=False, elem_id="attention-row")
                lens = gr.Plot(label="Logit lens", show_label=False, elem_id="lens")
            with gr.Tab("5 · Speed", id="speed"):
                speed_cards = gr.HTML(elem_id="speed-cards")
                timeline = gr.Plot(label="Timeline", show_label=False, elem_id="timeline")
                step_times = gr.Plot(label="Time per step", show_label=False, elem_id="step-times")
                sweep_btn = gr.Button("Measure TTFT at several prompt lengths", elem_id="sweep")
                sweep_plot = gr.Plot(label="TTFT vs prompt length", show_label=False, elem_id="sweep-plot")
            with gr.Tab("7 · Reasoning", id="reasoning"):
                reasoning_tab.build(engine, lang)
            with gr.Tab("8 · Sampling", id="sampling"):
                with gr.Row():
                    s_step = gr.Slider(0, 1, value=0, step=1, label="Decode step")
                    s_temperature = gr.Slider(0, 3, value=1, step=0.05, label="Temperature")
                    s_top_k = gr.Slider(0, 50, value=0, step=1, label="Top-k (0 = off)", elem_id="s-top-k")
                    s_top_p = gr.Slider(0.01, 1, value=1, step=0.01, label="Top-p")
                    s_seed = gr.Number(value=0, precision=0, label="Seed", minimum=0)
                playground = gr.Plot(label="The same candidates through each stage", show_label=False, elem_id="playground")
                survivors = gr.HTML(elem_id="survivors")
            with gr.Tab("Trace file", id="file"):
                download = gr.File(label="This run's trace (JSON)", interactive=False, elem_id="download")
                upload = gr.File(label="Load a trace (JSON) to view it without running the model",
                                 file_types=[".json"], type="filepath", elem_id="upload")

        # --- wiring ---------------------------------------------------------------------------
        settings_in = [max_new, temperature, top_k, top_p, seed, attention_on, lens_on, template_on]
        views = [prompt_chips, compare, prefill_facts, heatmap, head_view, kv_plot, projection_plot,
                 projection_table, step_facts, candidates, attention_row, lens, speed_cards, timeline,
                 step_times, playground, survivors, download, step, s_step, query, embedding_plot, neighbors, output]

        def render_all(t, layer_v, head_v, query_v, d_layer_v, d_head_v, st, sk, sp, sd, lang_v):
            if t is None:
                return [gr.skip()] * len(views)
            last = max(len(t.steps) - 1, 0)
            # the sampling playground opens on the step where the model was least sure
            unsure = max(range(len(t.steps)), key=lambda i: t.steps[i].entropy_model, default=0)
            mapped = (t.attention.prefill_tokens if t.attention else len(t.prompt.tokens)) - 1
            q = min(int(query_v or 0), mapped)
            return [*tokens_view(t, actions.comparison(t), 0, lang_v),
                    *prefill_view(t, layer_v, head_v, q, lang_v), *kv_view(t, lang_v),
                    *decode_view(t, last, d_layer_v, d_head_v, lang_v), *speed_view(t, lang_v),
                    *sampling_view(t, unsure, st, sk, sp, sd, lang_v), actions.trace_file(t),
                    gr.update(maximum=max(last, 1), value=last), gr.update(maximum=max(last, 1), value=unsure),
                    gr.update(maximum=max(mapped, 1), value=q), *actions.embedding(t, 0, lang_v),
                    # the marker tells a watcher (and the browser test) that every chapter is drawn
                    html.output_html(t, lang=lang_v) + '<span class="tbt-rendered"></span>']

        render_in = [trace, layer, head, query, d_layer, d_head, s_temperature, s_top_k, s_top_p, s_seed, lang]
        run_event = gr.on([run_btn.click, prompt.submit], actions.run,
                          inputs=[prompt, *settings_in, lang], outputs=[trace, output, status, prompt_chips],
                          concurrency_limit=ENGINE_CONCURRENCY, concurrency_id="engine", api_visibility="private")
        run_event.then(render_all, render_in, views, api_visibility="private")
        stop_btn.click(actions.stop, None, None, queue=False, api_visibility="private")
        upload.upload(actions.load, upload, trace, api_visibility="private").success(
            render_all, render_in, views, api_visibility="private")

        prefill_in = [trace, layer, head, query, lang]
        for control in (layer, head, query):
            control.input(lambda t, *a: prefill_view(t, *a) if t else [gr.skip()] * 3, prefill_in,
                          [prefill_facts, heatmap, head_view], api_visibility="private")
        decode_in = [trace, step, d_layer, d_head, lang]
        decode_out = [step_facts, candidates, attention_row, lens]
        for control in (step, d_layer, d_head):
            control.input(lambda t, *a: decode_view(t, *a) if t else [gr.skip()] * 4, decode_in, decode_out,
                          api_visibility="private")

        def pick_step(t, d_layer_v, d_head_v, lang_v, evt: gr.EventData):
            if t is None:
                return [gr.skip()] * 6
            index = int(evt.index)
            return [gr.update(value=index), gr.update(value=index),
                    *decode_view(t, index, d_layer_v, d_head_v, lang_v)]
        output.click(pick_step, [trace, d_layer, d_head, lang], [step, s_step, *decode_out],
                     api_visibility="private")

        def pick_token(t, lang_v, evt: gr.EventData):
            if t is None:
                return [gr.skip()] * 3
            return [tokens_view(t, None, int(evt.index), lang_v)[0], *actions.embedding(t, evt.index, lang_v)]
        prompt_chips.click(pick_token, [trace, lang], [prompt_chips, embedding_plot, neighbors],
                           api_visibility="private")

        sampling_in = [trace, s_step, s_temperature, s_top_k, s_top_p, s_seed, lang]
        for control in (s_step, s_temperature, s_top_k, s_top_p, s_seed):
            control.input(lambda t, *a: sampling_view(t, *a) if t else [gr.skip()] * 2, sampling_in,
                          [playground, survivors], api_visibility="private")
        sweep_btn.click(actions.sweep, [prompt, lang], sweep_plot, concurrency_limit=ENGINE_CONCURRENCY,
                        concurrency_id="engine", api_visibility="private")

        # The documented API: prompt + settings in, Trace JSON file out.
        api_file = gr.File(visible=False)
        api_btn = gr.Button(visible=False)
        api_btn.click(actions.api_trace, [prompt, *settings_in], api_file, api_name="trace",
                      concurrency_limit=ENGINE_CONCURRENCY, concurrency_id="engine")
    return demo


def main() -> None:
    parser = argparse.ArgumentParser(description="Token by Token")
    parser.add_argument("--model", default=None, help="hub id or local folder (default: embedded SmolLM2-135M)")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--share", action="store_true", help="also serve through a public gradio.live link")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    engine = Engine.load(args.model)
    demo = build(engine)
    demo.queue(max_size=64).launch(server_name=args.host, server_port=args.port, share=args.share,
                                   show_error=False, css=CSS)


if __name__ == "__main__":
    main()
