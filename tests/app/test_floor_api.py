"""/serve through gradio_client against the live app: a small workload served three ways, its
figures and its file; bad settings answered with a message in the caller's language."""

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from engine.schema.floor_check import read_floor

SMALL = dict(requests=3, rate=0, prompt_tokens=48, shared_prefix=16, new_tokens=4, page_size=8, num_blocks=64,
             max_batch_tokens=64)


def test_serve_answers_figures_and_a_floor_file(client):
    figures, file = client.predict(**SMALL, api_name="/serve")
    assert figures["requests"] == 3 and figures["tokens_equal_generate"] == 3
    assert figures["settings"]["arrival"] == "burst"
    for way in ("continuous", "one_at_a_time", "static"):
        assert figures[way]["tokens"] > 0 and figures[way]["throughput_tok_s"] > 0
    path = file["path"] if isinstance(file, dict) else file
    with open(path, encoding="utf-8") as f:
        floor = read_floor(f.read())
    assert [lane.same_as_generate for lane in floor.lanes] == [True] * 3
    assert figures["blocks"]["peak_shared"] == floor.cache.peak_blocks


@pytest.mark.parametrize("change, words", [({"requests": 0}, "requests"), ({"page_size": 0}, "page_size"),
                                           ({"num_blocks": 2}, "blocks"), ({"scheduler": "lifo"}, "scheduler"),
                                           ({"rate": "fast"}, "rate")])
def test_bad_settings_get_a_message_not_a_run(client, change, words):
    with pytest.raises(AppError) as caught:
        client.predict(**{**SMALL, **change}, api_name="/serve")
    assert words in str(caught.value)


def test_a_chinese_caller_reads_the_refusal_in_chinese(app_url):
    zh = Client(app_url, verbose=False, headers={"Accept-Language": "zh"})
    with pytest.raises(AppError) as caught:
        zh.predict(**{**SMALL, "num_blocks": 2}, api_name="/serve")
    assert "缓存" in str(caught.value)
