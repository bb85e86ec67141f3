"""What a host sets through the environment, read in one place (no torch: viz and ui may import it).

Every `TBT_*` variable is read by one function here. A value that does not parse is logged and
the default used instead: a typo in a Space's settings must not stop the server at import.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

OFF = ("0", "off", "false", "no")


def _parsed(name: str, default, kind):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        log.warning("%s=%r is not a valid %s; using %r", name, raw, kind.__name__, default)
        return default


def integer(name: str, default: int) -> int:
    return _parsed(name, default, int)


def number(name: str, default: float) -> float:
    return _parsed(name, default, float)


def switch(name: str, default: bool = True) -> bool:
    """Unset: `default`; 0/off/false/no: False; anything else: True."""
    raw = os.environ.get(name, "").strip().lower()
    return default if not raw else raw not in OFF


def text(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def user_cache() -> Path:
    """Where converted weights and compiled packages live: TBT_CACHE_DIR, else ~/.cache/token-by-token."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "token-by-token"
    return Path(os.environ.get("TBT_CACHE_DIR") or default)


def compile_cache() -> Path:
    """TBT_COMPILE_CACHE: the compiled decode path's packages and Inductor's own cache."""
    return Path(os.environ.get("TBT_COMPILE_CACHE") or user_cache() / "inductor")


def point_inductor_at_cache() -> None:
    """Inductor fixes its cache folder (TORCHINDUCTOR_CACHE_DIR) the first time it needs one, which
    can be before the compiled path starts, so the model loader calls this before torch does any
    work. Measured: the first graph compiled in 145 s on an empty cache, 111 s on the same cache warm."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(compile_cache()))


def compile_enabled() -> bool:
    """TBT_COMPILE=0 turns the compiled decode path off (no back-room build, no package loaded)."""
    return switch("TBT_COMPILE")


def compile_autotune() -> bool:
    """TBT_COMPILE_AUTOTUNE=0 builds the CPU step without Inductor's max-autotune: a quicker build (its
    GEMM choices not timed; the embedded model's 72 s instead of 115 s on two cores), a step that may be
    slower (the verdict times it all the same). The test suite's one build uses it; a host keeps the default."""
    return switch("TBT_COMPILE_AUTOTUNE")


def fast_kind(device_type: str) -> str:
    """TBT_FAST_KIND: the compiled path's kind, "graph" (torch.compile in the process: CUDA graphs on a GPU)
    or "aoti" (a package built ahead of time: the CPU's); by default "graph" on CUDA, "aoti" elsewhere."""
    default = "graph" if device_type == "cuda" else "aoti"
    kind = os.environ.get("TBT_FAST_KIND", "").strip() or default
    if kind not in ("graph", "aoti"):        # as a bad number: said in the log, the default used
        log.warning("TBT_FAST_KIND=%r is not 'graph' or 'aoti'; using %r", kind, default)
        return default
    return kind


def graph_backend() -> str:
    """TBT_GRAPH_BACKEND: dynamo's backend for the graph path ("inductor"; the tests trace with "aot_eager")."""
    return os.environ.get("TBT_GRAPH_BACKEND", "").strip() or "inductor"


def compile_pays() -> float:
    """TBT_COMPILE_PAYS: the speed-up over eager a compiled step's package must show to be kept (1.15)."""
    return number("TBT_COMPILE_PAYS", 1.15)


def lab_mode() -> str:
    """TBT_LAB: "on", "recorded", "off", or "" (unset: the app decides per model)."""
    return text("TBT_LAB").lower()


def trusted_proxies() -> int:
    """TBT_TRUSTED_PROXIES: how many proxies in front of the app append to X-Forwarded-For (the
    address the N-th from the right reports is the client's). Unset: 1 on a Hugging Face Space
    (SPACE_ID set: its proxy appends the address it saw), else 0 (no header is trusted)."""
    return max(0, integer("TBT_TRUSTED_PROXIES", 1 if text("SPACE_ID") else 0))


def concurrency() -> int:
    """TBT_CONCURRENCY: runs of one model in progress at once (the page's queue admits this many)."""
    return max(1, integer("TBT_CONCURRENCY", 2))


def max_models() -> int:
    """TBT_MAX_MODELS: engines kept loaded at once."""
    return max(1, integer("TBT_MAX_MODELS", 2))


def model_wait_s() -> float:
    """How long a visitor's call waits for a model that is still loading (TBT_MODEL_WAIT_S) before it is
    told to try again: a big hub model takes minutes; a load that takes longer is stuck."""
    return max(1.0, number("TBT_MODEL_WAIT_S", 900.0))


def models() -> list[str]:
    """TBT_MODELS: the comma-separated model ids visitors may pick ("embedded" is the wheel's model)."""
    return [m.strip() for m in text("TBT_MODELS").split(",") if m.strip()]


def endpoints() -> str:
    """TBT_ENDPOINTS: a JSON list of served models (engine/served/endpoints.py parses it)."""
    return text("TBT_ENDPOINTS")


def slo_ms() -> tuple[float, float]:
    """TBT_SLO_TTFT_MS / TBT_SLO_TPOT_MS: the load sweep's service-level objective."""
    return number("TBT_SLO_TTFT_MS", 1000.0), number("TBT_SLO_TPOT_MS", 100.0)


def session_grace_s() -> int:
    """TBT_SESSION_GRACE_S: seconds a page session is kept after its visitor left (ui/host/sessions.py)."""
    return max(0, integer("TBT_SESSION_GRACE_S", 120))


def max_sessions() -> int:
    """TBT_MAX_SESSIONS: page sessions Gradio keeps at most (its state_session_capacity; the oldest
    goes first). Callers that never send Gradio's heartbeat (raw HTTP) never "leave", so only this
    bounds them; each session holds ~0.7 MB of the page's config and its outputs (ui/host/sessions.py)."""
    return max(16, integer("TBT_MAX_SESSIONS", 1000))


def malloc_trim() -> bool:
    """TBT_MALLOC_TRIM=0: no malloc_trim after the last run ends (engine/host/memory.py)."""
    return switch("TBT_MALLOC_TRIM")


def malloc_arenas() -> int:
    """TBT_MALLOC_ARENAS: glibc malloc arenas at most (mallopt M_ARENA_MAX, set as the app starts,
    before its threads exist; default 2: measured 237 MB less RSS after 200 soak runs); 0: glibc's own limit, 8 a core (engine/host/memory.py)."""
    return max(0, integer("TBT_MALLOC_ARENAS", 2))


def share_dir() -> Path:
    """TBT_SHARE_DIR: where runs behind share links are kept (capped by TBT_SHARE_MB)."""
    return Path(os.environ.get("TBT_SHARE_DIR") or user_cache() / "shared-runs")


def backroom_turn() -> tuple[float, float]:
    """TBT_BACKROOM_HOLD_S / TBT_BACKROOM_TURN_S: while visitors' runs never stop, a back-room job
    stands still at most HOLD seconds (6), then has the machine for TURN seconds (4): 40 % of it."""
    return max(0.5, number("TBT_BACKROOM_HOLD_S", 6.0)), max(0.1, number("TBT_BACKROOM_TURN_S", 4.0))


def backroom_deadline_s() -> float:
    """TBT_BACKROOM_DEADLINE_S: a visitor's back-room job (lab, floor, evaluation) still going after
    this many seconds of wall time is ended, and its visitor told (1800)."""
    return max(10.0, number("TBT_BACKROOM_DEADLINE_S", 1800.0))


def pause_ledger() -> str:
    """TBT_PAUSE_LEDGER: set by the server for a back-room child (engine/host/backroom.py)."""
    return text("TBT_PAUSE_LEDGER")


@dataclass(frozen=True)
class Limits:
    """Caps a host can set (environment variables TBT_MAX_*, TBT_LAB_*) and a visitor sees."""
    max_prompt_chars: int = 20_000
    max_prompt_tokens: int = 4_096
    max_new_tokens: int = 1_024
    attention_prompt_tokens: int = 256     # prefill maps cover at most this many prompt tokens
    attention_max_prompt_tokens: int = 2_048  # longer prompts cannot capture attention at all
    attention_max_bytes: int = 48_000_000  # compressed attention rows kept per trace
    lens_max_bytes: int = 32_000_000       # hidden states a run keeps for the logit lens (~480 steps of SmolLM2)
    max_top_candidates: int = 100
    max_upload_bytes: int = 64_000_000     # trace files a visitor may load
    lab_max_prompt_tokens: int = 2_048     # longest prefill the lab's attention experiment runs
    lab_seconds: int = 50                  # time budget of one lab experiment's growing sizes
    lab_max_parameters: int = 1_000_000_000  # the weights experiment loads extra copies only up to this
    prefix_cache_bytes: int = 256_000_000  # KV caches of finished runs and branches kept for forking
    floor_max_requests: int = 16           # requests in one serving-floor workload
    floor_seconds: int = 240               # time budget of one serving-floor run (its three ways together)
    floor_max_kv_bytes: int = 1_024_000_000  # the paged cache a serving-floor run may allocate
    share_bytes: int = 200_000_000         # runs kept for links to them (engine/host/shared_runs.py)

    @classmethod
    def from_env(cls) -> Limits:
        return cls(
            max_prompt_chars=integer("TBT_MAX_PROMPT_CHARS", cls.max_prompt_chars),
            max_prompt_tokens=integer("TBT_MAX_PROMPT_TOKENS", cls.max_prompt_tokens),
            max_new_tokens=integer("TBT_MAX_NEW_TOKENS", cls.max_new_tokens),
            max_upload_bytes=integer("TBT_MAX_UPLOAD_MB", cls.max_upload_bytes // 1_000_000) * 1_000_000,
            lab_max_prompt_tokens=integer("TBT_LAB_MAX_TOKENS", cls.lab_max_prompt_tokens),
            lab_seconds=integer("TBT_LAB_SECONDS", cls.lab_seconds),
            lab_max_parameters=integer("TBT_LAB_MAX_PARAMS", cls.lab_max_parameters),
            prefix_cache_bytes=integer("TBT_PREFIX_CACHE_MB", cls.prefix_cache_bytes // 1_000_000) * 1_000_000,
            share_bytes=integer("TBT_SHARE_MB", cls.share_bytes // 1_000_000) * 1_000_000,
        )
