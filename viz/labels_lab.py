"""Labels of the acceleration lab (chapter 6), merged into viz.labels.LABELS."""

LAB: dict[str, dict[str, str]] = {
    # page text (ui/lab_tab.py)
    "lab_intro": {"en": "Every number here is measured on the machine this app runs on, in one run, side by "
                        "side (warm-up first, then repeats; the median is shown, the spread is kept). "
                        "Rows marked *projection* are computed from public datasheets, not measured.",
                  "zh": "这里的每个数字都是在运行本应用的这台机器上、同一次运行中并排实测的（先预热，再重复多次；"
                        "显示中位数，并保留波动范围）。标为“推算”的行来自公开的规格数据，不是实测。"},
    "lab_kv_heading": {"en": "1 · KV cache on vs off", "zh": "1 · 开启与关闭 KV 缓存"},
    "lab_kv_explain": {"en": "With the cache, each step feeds only the new token and reuses the keys and values "
                             "already computed; without it, each step recomputes the whole sequence.\n"
                             "So the cache-off line climbs as the text grows, while the cache-on line stays flat.",
                       "zh": "有缓存时，每一步只输入新 token，复用已经算好的键和值；没有缓存时，每一步都要把整个序列重算一遍。\n"
                             "所以关闭缓存的曲线会随文本变长而上升，开启缓存的曲线基本持平。"},
    "lab_attn_heading": {"en": "2 · Attention kernels: eager vs SDPA (vs FlashAttention-2)",
                         "zh": "2 · 注意力算子：eager、SDPA（与 FlashAttention-2）"},
    "lab_attn_explain": {"en": "Eager attention writes the whole T × T score matrix to memory for every head and "
                               "layer; fused kernels (SDPA, FlashAttention) compute it in tiles and never store it.\n"
                               "Same outputs, but the fused kernels need far less memory as the prompt gets longer.",
                         "zh": "eager 注意力会为每一层、每个头把完整的 T × T 分数矩阵写进内存；融合算子（SDPA、FlashAttention）"
                               "分块计算，从不保存整张矩阵。\n输出相同，但提示词越长，融合算子省下的内存越多。"},
    "lab_weights_heading": {"en": "3 · Weights: fp32, bf16, int8, 4-bit", "zh": "3 · 权重精度：fp32、bf16、int8、4 位"},
    "lab_weights_explain": {"en": "Each decode step reads every weight once, so fewer bytes per weight means less to "
                                  "read, if the hardware has a fast kernel for that format.\n"
                                  "Agreement and KL divergence show what the smaller weights cost in quality, "
                                  "against fp32 on fixed texts.",
                            "zh": "每个解码步骤都要把所有权重读一遍，所以每个权重占的字节越少，要读的就越少——前提是硬件对这种格式有高效的算子。\n"
                                  "一致率和 KL 散度表示更小的权重在质量上付出的代价（在固定文本上与 fp32 对比）。"},
    "lab_roof_heading": {"en": "4 · Roofline: the fastest this could ever be", "zh": "4 · Roofline：理论上最快能有多快"},
    "lab_roof_explain": {"en": "A pass cannot beat its arithmetic at peak FLOP/s, nor reading its bytes at full memory "
                               "bandwidth: prefill is usually limited by compute, decoding by bandwidth.\n"
                               "Measured ÷ bound says how close this machine gets; other GPUs are projections.",
                         "zh": "一次前向计算不可能比“以峰值算力完成全部运算”更快，也不可能比“以满带宽读完全部字节”更快："
                               "预填充通常受算力限制，解码受带宽限制。\n实测 ÷ 下限表示这台机器离极限有多近；其他 GPU 都是推算。"},
    "lab_run": {"en": "Run", "zh": "运行"},
    "lab_stop": {"en": "Stop", "zh": "停止"},
    "lab_export": {"en": "All lab results so far (JSON)", "zh": "目前所有实验结果（JSON）"},
    "lab_model_pick": {"en": "Model for the roofline", "zh": "Roofline 使用的模型"},
    "lab_not_run_yet": {"en": "Not run yet.", "zh": "尚未运行。"},
    "lab_mode_recorded": {"en": "On this server the lab does not run live (the host's setting `TBT_LAB=recorded`): "
                                "its experiments load extra model copies and hold the model for minutes. "
                                "The walkthrough shows a recorded run.",
                          "zh": "本服务器上的实验室不做现场运行（部署者设置 `TBT_LAB=recorded`）：这些实验要加载额外的模型副本，"
                                "并独占模型好几分钟。导览中可以看到一次录制的运行结果。"},
    "lab_mode_off": {"en": "The host has turned the acceleration lab off on this server (`TBT_LAB=off`).",
                     "zh": "部署者在本服务器上关闭了加速实验室（`TBT_LAB=off`）。"},
    "lab_took": {"en": "took {s} s", "zh": "用时 {s} 秒"},
    "lab_failed": {"en": "The experiment failed: {error}", "zh": "实验失败：{error}"},
    # shared
    "lab_err_not_run": {"en": "Press Run to measure this experiment.", "zh": "点击“运行”开始测量这个实验。"},
    "lab_err_no_rows": {"en": "Nothing was measured (stopped before the first run).",
                        "zh": "没有测到任何数据（在第一次运行前就停止了）。"},
    "lab_err_no_steps": {"en": "No decode step was measured.", "zh": "没有测到任何解码步骤。"},
    "lab_partial": {"en": "Stopped early: only part of the runs were measured.",
                    "zh": "提前停止：只测了部分运行。"},
    "lab_spread": {"en": "min – max", "zh": "最小 – 最大"},
    "lab_runs": {"en": "runs", "zh": "运行次数"},
    "lab_median_ms": {"en": "median ms", "zh": "中位数（毫秒）"},
    "lab_note": {"en": "note", "zh": "说明"},
    "lab_unavailable": {"en": "{what}: {reason}", "zh": "{what}：{reason}"},
    "lab_not_here": {"en": "not available here", "zh": "此处不可用"},
    "lab_skipped": {"en": "{n} tokens: {reason}", "zh": "{n} 个 token：{reason}"},
    # why something was not measured (codes from engine/lab)
    "lab_why_fa2_no_cuda": {"en": "needs a CUDA GPU (this run is on the CPU)", "zh": "需要 CUDA GPU（这次运行在 CPU 上）"},
    "lab_why_fa2_no_package": {"en": "the flash-attn package is not installed", "zh": "没有安装 flash-attn 包"},
    "lab_why_fa2_dtype": {"en": "needs fp16/bf16 weights; the model is {dtype}", "zh": "需要 fp16/bf16 权重，而模型是 {dtype}"},
    "lab_why_budget": {"en": "skipped to keep this experiment within {budget_s:.0f} s (the previous length took "
                             "{previous_s:.0f} s)",
                       "zh": "为把实验控制在 {budget_s:.0f} 秒内而跳过（上一个长度用了 {previous_s:.0f} 秒）"},
    "lab_why_bnb_missing": {"en": "the bitsandbytes package is not installed", "zh": "没有安装 bitsandbytes 包"},
    "lab_why_bf16_cpu": {"en": "this CPU cannot run bfloat16 matmuls", "zh": "这台 CPU 不能做 bfloat16 矩阵乘法"},
    "lab_why_load": {"en": "{reason}", "zh": "无法在这里加载（{reason}）"},
    "lab_why_forward": {"en": "{reason}", "zh": "在这里前向计算失败（{reason}）"},
    # 1 KV cache
    "lab_cache_on": {"en": "cache on", "zh": "开启缓存"},
    "lab_cache_off": {"en": "cache off", "zh": "关闭缓存"},
    "lab_kv_title": {"en": "KV cache: {x} faster end to end", "zh": "KV 缓存：端到端快了 {x}"},
    "lab_kv_title_partial": {"en": "KV cache on vs off", "zh": "开启与关闭 KV 缓存"},
    "lab_kv_sub": {"en": "{n} greedy tokens after a {p}-token prompt; median of {r} runs per step, band: min–max.",
                   "zh": "{p} 个 token 的提示词之后贪心生成 {n} 个 token；每一步取 {r} 次运行的中位数，色带为最小–最大。"},
    "lab_same_tokens": {"en": "Both runs generated exactly the same tokens.", "zh": "两种方式生成的 token 完全相同。"},
    "lab_diff_tokens": {"en": "The two runs generated different tokens (rounding differences).",
                        "zh": "两种方式生成的 token 不同（数值舍入的差别）。"},
    "lab_decode_step": {"en": "decode step", "zh": "解码步骤"},
    "lab_sequence": {"en": "tokens in the sequence", "zh": "序列中的 token 数"},
    "lab_ms_per_step": {"en": "milliseconds per step", "zh": "每一步的毫秒数"},
    "lab_kv_means": {"en": "With the cache, a token took {on}; without it {off} on average ({first} at the first "
                           "decode step, {last} at the last). End to end the cache was {x} faster.",
                     "zh": "开启缓存时每个 token 用时 {on}；关闭时平均 {off}（第一个解码步骤 {first}，最后一步 {last}）。"
                           "端到端算下来，缓存快了 {x}。"},
    # 2 attention
    "lab_attn_title": {"en": "Prefill time and peak memory by attention kernel",
                       "zh": "不同注意力算子的预填充时间和峰值内存"},
    "lab_attn_sub": {"en": "One prefill pass, median of {r} runs (bars: min–max), {dtype} weights. Dashed: one layer's "
                           "score matrix (heads × T × T), which eager stores whole.",
                     "zh": "一次预填充前向计算，取 {r} 次运行的中位数（误差线：最小–最大），{dtype} 权重。"
                           "虚线：一层的分数矩阵（头数 × T × T），eager 会把它整张存下来。"},
    "lab_time_panel": {"en": "time (log scale)", "zh": "时间（对数坐标）"},
    "lab_memory_panel": {"en": "peak memory during the pass (log scale)", "zh": "计算过程中的峰值内存（对数坐标）"},
    "lab_kernel": {"en": "attention kernel", "zh": "注意力算子"},
    "lab_prefill_ms": {"en": "prefill ms", "zh": "预填充毫秒数"},
    "lab_peak_memory": {"en": "peak memory", "zh": "峰值内存"},
    "lab_matrix": {"en": "score matrix, one layer", "zh": "一层的分数矩阵"},
    "lab_max_diff": {"en": "max |logit diff| vs eager", "zh": "与 eager 的最大 logit 差"},
    "lab_matches": {"en": "same output", "zh": "输出一致"},
    "lab_attn_means": {"en": "At {n} tokens eager took {time} the time of SDPA and peaked at {eager} against {sdpa}; "
                             "its score matrix alone is {matrix} per layer. {agree}",
                       "zh": "在 {n} 个 token 时，eager 的耗时是 SDPA 的 {time}，峰值内存 {eager}，而 SDPA 只有 {sdpa}；"
                             "仅一层的分数矩阵就有 {matrix}。{agree}"},
    "lab_outputs_agree": {"en": "The outputs agree within rounding.", "zh": "两者的输出在舍入误差内一致。"},
    "lab_outputs_differ": {"en": "The outputs differ by more than rounding: see the table.",
                           "zh": "两者的输出差别超出了舍入误差，详见表格。"},
    # 3 weights
    "lab_weights_title": {"en": "Weight formats: memory, speed and quality", "zh": "权重格式：内存、速度与质量"},
    "lab_weights_sub": {"en": "TPOT: {n} greedy tokens, median of {r} runs. Agreement and KL: next-token "
                              "predictions at {q} positions of fixed texts, against fp32.",
                        "zh": "TPOT：贪心生成 {n} 个 token，取 {r} 次运行的中位数。一致率和 KL：在固定文本的 {q} 个位置上"
                              "预测下一个 token，与 fp32 对比。"},
    "lab_gguf": {"en": "Dashed line: the original Q4_1 GGUF file, {size}.",
                 "zh": "虚线：原始的 Q4_1 GGUF 文件，{size}。"},
    "lab_gguf_line": {"en": "original Q4_1 GGUF file", "zh": "原始 Q4_1 GGUF 文件"},
    "lab_gguf_note": {"en": "the file the model ships as (reference, not run)", "zh": "模型发布时的文件（仅作参考，未运行）"},
    "lab_format": {"en": "weights", "zh": "权重格式"},
    "lab_weight_memory": {"en": "weight memory", "zh": "权重内存"},
    "lab_tpot_ms": {"en": "ms per token (TPOT)", "zh": "每 token 毫秒数（TPOT）"},
    "lab_agreement": {"en": "top-1 agreement with fp32", "zh": "与 fp32 的首选一致率"},
    "lab_kl": {"en": "mean KL vs fp32 (nats)", "zh": "与 fp32 的平均 KL（nat）"},
    "lab_same_text": {"en": "same greedy text as fp32", "zh": "贪心生成的文本与 fp32 相同"},
    "lab_other_text": {"en": "greedy text differs from fp32", "zh": "贪心生成的文本与 fp32 不同"},
    "lab_weights_means": {"en": "{small} weights take {share} of fp32's memory and still pick fp32's top token "
                                "{agree} of the time. Fastest per token here: {fast} ({tpot}).",
                          "zh": "{small} 权重只占 fp32 内存的 {share}，仍有 {agree} 的位置与 fp32 选出同一个首选 token。"
                                "这台机器上每 token 最快的是 {fast}（{tpot}）。"},
    # 4 roofline
    "lab_roof_title": {"en": "Roofline lower bounds · {model}", "zh": "Roofline 理论下限 · {model}"},
    "lab_roof_sub": {"en": "A {p}-token prompt, then {n} new tokens. Circles: the bound; diamonds: measured here, "
                           "with measured ÷ bound.",
                     "zh": "{p} 个 token 的提示词，再生成 {n} 个 token。圆点：理论下限；菱形：在这里实测，旁边是实测 ÷ 下限。"},
    "lab_roof_sub2": {"en": "Bounds on GPUs use datasheet bandwidth and bf16/fp16 peak FLOP/s (projections); "
                            "this machine uses its measured bandwidth and matmul FLOP/s.",
                      "zh": "GPU 的下限用规格书上的带宽和 bf16/fp16 峰值算力（推算）；这台机器用实测的带宽和矩阵乘法算力。"},
    "lab_bound": {"en": "lower bound", "zh": "理论下限"},
    "lab_bound_by_compute": {"en": "compute", "zh": "算力"},
    "lab_bound_by_memory": {"en": "memory bandwidth", "zh": "内存带宽"},
    "lab_projection": {"en": "projection", "zh": "推算"},
    "lab_measured_here": {"en": "measured here", "zh": "本机实测"},
    "lab_does_not_fit": {"en": "does not fit", "zh": "放不下"},
    "lab_ms_log": {"en": "milliseconds (log scale)", "zh": "毫秒（对数坐标）"},
    "lab_hardware": {"en": "hardware", "zh": "硬件"},
    "lab_ratio": {"en": "measured ÷ bound", "zh": "实测 ÷ 下限"},
    "lab_ttft_bound": {"en": "TTFT bound", "zh": "TTFT 下限"},
    "lab_limited_by": {"en": "prefill limited by", "zh": "预填充受限于"},
    "lab_tpot_bound": {"en": "TPOT bound", "zh": "TPOT 下限"},
    "lab_measured_ttft": {"en": "measured TTFT", "zh": "实测 TTFT"},
    "lab_measured_tpot": {"en": "measured TPOT", "zh": "实测 TPOT"},
    "lab_fits": {"en": "fits in memory", "zh": "内存放得下"},
    "lab_roof_means": {"en": "Here: {bw} GB/s read bandwidth and {flops} GFLOP/s in matmuls. A token took {tpot}, "
                             "against a bound of {bound} ({ratio}); TTFT was {ttft_ratio} its bound.",
                       "zh": "本机：读带宽 {bw} GB/s，矩阵乘法 {flops} GFLOP/s。每个 token 用时 {tpot}，理论下限 {bound}"
                             "（{ratio}）；TTFT 是其下限的 {ttft_ratio}。"},
}
