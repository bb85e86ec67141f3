"""One visitor's profile while another clicks through the steps of their run (issue 52 item 2).

The profile's timers are registered on the model's own modules (the final norm among them) inside
the engine's lock; the logit lens runs the final norm and the LM head's weights on a step's kept
states, on view, without that lock. If the lens called the norm module as a pass does, every click
during a timed pass would run the profile's timers: a KeyError when the two calls interleave, or the
lens's time counted as the norm's. Here a lens-clicking thread runs for 100 profiles: each must
come back without an error, and with the same timed modules, called as often, as a quiet run's."""

import dataclasses
import threading

from engine import Settings, run_trace
from engine.model import lens
from engine.profile.run import profile_trace

PROMPT = "The sky is blue because the light of the sun is scattered by the air."
ROUNDS = 100


def shape(profile: dict) -> dict:
    """What must not change with another visitor's clicks: per phase, each timed module's calls
    and each op row's (layer, op)."""
    return {name: (p["module_calls"], sorted((str(r["layer"]), r["op"]) for r in p["rows"]))
            for name, p in profile["phases"].items()}


def test_a_profile_beside_another_visitors_lens_clicks_is_a_quiet_runs(tiny_engine):
    engine = tiny_engine("llama")
    settings = dataclasses.replace(Settings(max_new_tokens=4, attention=False, logit_lens=True), ignore_eos=True)
    theirs = run_trace(engine, "Name three colours.", settings)       # the other visitor's run
    mine = run_trace(engine, PROMPT, settings)
    assert all(s.hidden is not None for s in theirs.steps)
    quiet = shape(profile_trace(engine, mine, step=2, repeats=1))
    assert quiet["prefill"][0]["final_norm"] == 1 and quiet["decode"][0]["final_norm"] == 1

    stop, clicks, errors = threading.Event(), [0], []

    def clicking():                 # the other visitor moves the step slider: one step's lens each time
        try:
            while not stop.is_set():
                step = theirs.steps[clicks[0] % len(theirs.steps)]
                assert lens.step_lens(engine, dataclasses.replace(step, lens=None))
                clicks[0] += 1
        except BaseException as exc:        # noqa: BLE001 -- reported below, in the test's thread
            errors.append(exc)
    other = threading.Thread(target=clicking, daemon=True)
    other.start()
    try:
        for _ in range(ROUNDS):
            assert shape(profile_trace(engine, mine, step=2, repeats=1)) == quiet
    finally:
        stop.set()
        other.join(30)
    assert not errors, errors
    assert clicks[0] >= ROUNDS          # the clicks really went on beside the profiles
