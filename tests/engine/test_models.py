"""The host's models: loaded outside the table's lock, one load per model, an LRU cap."""

import threading
import time

import pytest

from ui.host import models as models_module
from ui.host.models import Models
from tests.waits import inside, wait_until


class FakeEngine:
    def __init__(self, model_id: str, limits=None):
        self.model_id, self.active_runs = model_id, 0


@pytest.fixture
def slow_loads(monkeypatch):
    """load_engine that takes 0.5 s for every model but "a", and counts its calls."""
    calls = []

    def load(model_id, limits=None):
        calls.append(model_id)
        if model_id != "a":
            time.sleep(0.5)
        return FakeEngine(model_id)
    monkeypatch.setattr(models_module, "load_engine", load)
    return calls


def test_a_loaded_model_is_served_while_another_loads(slow_loads):
    models = Models(["a", "b", "c"], max_models=3)
    loader = threading.Thread(target=models.get, args=("b",))
    loader.start()
    wait_until(lambda: "b" in slow_loads, 10, '"b"\'s load to begin')       # "b" is loading now
    started = time.monotonic()
    assert models.get("a").model_id == "a"
    assert time.monotonic() - started < 0.1           # did not wait for "b"'s load
    loader.join()


def test_two_visitors_of_one_new_model_share_one_load(slow_loads):
    models = Models(["a", "b"], max_models=3)
    got = []
    threads = [threading.Thread(target=lambda: got.append(models.get("b"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert slow_loads.count("b") == 1 and len({id(e) for e in got}) == 1


def test_least_recently_used_models_make_room_but_never_the_default_or_a_busy_one(slow_loads):
    models = Models(["a", "b", "c", "d"], max_models=2)
    models.get("b")
    assert list(models.engines) == ["a", "b"]
    models.engines["b"].active_runs = 1               # a run in progress keeps "b"
    models.get("c")
    assert set(models.engines) == {"a", "b", "c"}     # over the cap rather than cut a run short
    models.engines["b"].active_runs = 0
    models.get("d")
    assert "a" in models.engines and len(models.engines) == 2 and "d" in models.engines
    with pytest.raises(Exception, match="not one of the models"):
        models.get("e")


class OneEngine:
    """A Models stand-in for the UI's classes: every allowed name is served by a real engine
    (`others` maps names to other engines), and each name a visitor's action asks for is recorded."""

    def __init__(self, engine, others: dict | None = None):
        self.engine, self.default = engine, engine.info.id
        self.engines = {engine.info.id: engine, **(others or {})}
        self.allowed = list(self.engines)
        self.asked: list[str] = []

    def get(self, model_id, lang="en"):
        self.asked.append(model_id)
        return self.engines.get(model_id) or self.engine

    def exclusive(self, reason):
        return Models.exclusive(self, reason)

    def of_trace(self, trace):
        return Models.of_trace(self, trace)


class LockingEngine(FakeEngine):
    def __init__(self, model_id, limits=None):
        super().__init__(model_id)
        self.lock, self.held_for = threading.RLock(), None

    def exclusive(self, reason):
        from engine.model.core import Engine
        return Engine.exclusive(self, reason)


def test_a_lab_experiment_holds_every_loaded_model(monkeypatch):
    """While the lab times on one model, a run on another model waits too (it would share the CPU)."""
    monkeypatch.setattr(models_module, "load_engine", LockingEngine)
    models = Models(["a", "b"], max_models=2)
    models.get("b")
    free = []
    with models.exclusive("kv_cache"):
        def try_run():
            for engine in models.engines.values():
                got = engine.lock.acquire(timeout=0.05)
                free.append(got)
                if got:
                    engine.lock.release()
        other = threading.Thread(target=try_run)
        other.start()
        other.join()
        assert {e.held_for for e in models.engines.values()} == {"kv_cache"}
    assert free == [False, False]
    assert all(e.held_for is None and e.lock.acquire(timeout=0.05) for e in models.engines.values())


def test_every_tab_runs_the_visitors_model(engine):
    """The reasoning tab, the walkthrough's live run and the evaluation ask for the visitor's model
    (the dropdown's value), not the host's default."""
    from ui.chapters.reasoning import ReasoningTab
    from ui.walkthrough.tab import Walkthrough
    models = OneEngine(engine)
    tab = ReasoningTab(models)
    list(tab.stream_both("What is 2 + 3?", 8, 4, "visitor-model", "en", None))
    evaluation = tab.run_eval([0], 1, "eval-model", "en", None)
    next(evaluation)            # the model is asked for before the first progress; the evaluation itself
    evaluation.close()          # (a back-room child) is engine/test_reasoning.py's
    walk = Walkthrough(models)
    next(walk.run_live("en", False, "walkthrough-model", None))
    assert models.asked == ["visitor-model", "eval-model", "walkthrough-model"]


def test_the_page_can_come_before_the_model(slow_loads):
    """The app builds its page on Models(load=False); whoever needs the model waits for the load."""
    models = Models(["b"], load=False)
    assert slow_loads == [] and models.default == "b" and models.limits is not None
    got = []
    waiter = threading.Thread(target=lambda: got.append(models.engine))
    waiter.start()
    wait_until(lambda: inside(waiter, "ui/host/models.py", "wait"), 10, "the caller waiting for the model")
    assert got == []                                  # no model yet: the caller waits
    models.load_default()
    waiter.join(5)
    assert [e.model_id for e in got] == ["b"] and slow_loads == ["b"]
    assert models.get(None).model_id == "b" and slow_loads == ["b"]   # loaded once


def test_a_default_that_cannot_load_falls_back_to_the_embedded_model(monkeypatch):
    from engine import EngineError
    from engine.schema.specs import EMBEDDED

    def load(model_id, limits=None):
        if model_id != EMBEDDED:
            raise EngineError("no such model")
        return FakeEngine(model_id)
    monkeypatch.setattr(models_module, "load_engine", load)
    models = Models(["org/missing", "c"], load=False)
    models.load_default()
    assert models.default == EMBEDDED and models.allowed == [EMBEDDED, "c"]
    assert "org/missing" in models.notice() and models.engine.model_id == EMBEDDED
    assert "org/missing" in models.notice("zh") and "未能加载" in models.notice("zh")


def test_a_model_that_fails_to_load_answers_its_waiters(monkeypatch):
    import gradio as gr

    def load(model_id, limits=None):
        raise RuntimeError("the disk is gone")
    monkeypatch.setattr(models_module, "load_engine", load)
    models = Models(["a"], load=False)
    with pytest.raises(RuntimeError):
        models.load_default()
    with pytest.raises(gr.Error, match="failed to load"):
        models.get("a")                               # not a hang
