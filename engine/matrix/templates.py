"""Chat templates of each thinking shape, for the tiny models (engine/matrix/tiny.py).

"scaffold" is the embedded SmolLM2's own template (kept as the tokenizer has it); the other two are
the shapes of published templates, cut to what decides thinking:
  - "switch": Qwen3's: `enable_thinking=false` pre-closes an empty think block;
  - "tags":   DeepSeek-R1-Distill's: the generation prompt itself opens "<think>".
engine/run/reasoning.py tells them apart by rendering them, never by a model's name.
"""

SWITCH = (
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' and '</think>' in message.content %}"
    "{%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}"
    "{%- else %}{%- set content = message.content %}{%- endif %}"
    "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)

TAGS = (
    "{{ bos_token }}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' %}{{ message.content }}{%- endif %}"
    "{%- if message.role == 'user' %}{{ '<|User|>' + message.content }}{%- endif %}"
    "{%- if message.role == 'assistant' %}{{ '<|Assistant|>' + message.content.split('</think>')[-1]"
    " + '<|im_end|>' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|Assistant|><think>\\n' }}{%- endif %}"
)

# None: keep the tokenizer's own (SmolLM2's, which has no thinking: the engine scaffolds it)
TEMPLATES = {"scaffold": None, "switch": SWITCH, "tags": TAGS}
