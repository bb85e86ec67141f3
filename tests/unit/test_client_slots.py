"""ui/host/runs.ClientSlots: a client is its session and an address nobody in front of the app can
write. A caller writes X-Forwarded-For as it likes; only what the declared proxies appended counts."""

from types import SimpleNamespace

import pytest

from engine import environment
from ui.host.runs import ClientSlots, RunRefused


def call(session: str, forwarded: str | None = None, peer: str = "10.16.3.80"):
    headers = {"x-forwarded-for": forwarded} if forwarded is not None else {}
    return SimpleNamespace(session_hash=session, headers=headers, client=SimpleNamespace(host=peer))


def test_no_proxy_declared_no_header_is_read():
    slots = ClientSlots(hops=0)
    # the caller's own header names another visitor's address: it neither takes that slot...
    assert slots.keys(call("a", "203.0.113.7")) == ["session:a", "address:10.16.3.80"]
    # ...nor steps out of its own by writing a new address each call
    assert slots.address(call("b", "198.51.100.1")) == slots.address(call("c", "198.51.100.2"))
    # this machine's own scripts: their sessions are their slots
    assert slots.keys(call("a", "203.0.113.7", peer="127.0.0.1")) == ["session:a"]


def test_a_spoofed_header_behind_one_proxy_keys_on_what_the_proxy_appended():
    slots = ClientSlots(hops=1)
    # the proxy appended 203.0.113.7 (the address it saw) after whatever the caller wrote
    first, second = call("a", "1.1.1.1, 203.0.113.7"), call("b", "2.2.2.2, 203.0.113.7")
    assert slots.address(first) == slots.address(second) == "203.0.113.7"
    with slots.hold(first, "busy"):
        with pytest.raises(RunRefused):                # a new session and a new forged entry: still one slot
            with slots.hold(second, "busy"):
                pass
        with slots.hold(call("c", "203.0.113.7, 198.51.100.9"), "busy"):   # another visitor runs
            pass
    with slots.hold(second, "busy"):                    # free again once the first ends
        pass


def test_two_proxies_take_the_second_entry_from_the_right():
    slots = ClientSlots(hops=2)
    assert slots.address(call("a", "6.6.6.6, 203.0.113.7, 10.0.0.1")) == "203.0.113.7"
    # fewer entries than declared proxies: it did not come through them; the connection's own address
    assert slots.address(call("a", "203.0.113.7")) == "10.16.3.80"


def test_the_session_is_a_key_too():
    slots = ClientSlots(hops=1)
    with slots.hold(call("a", "203.0.113.7"), "busy"):
        with pytest.raises(RunRefused):                 # the same session from elsewhere
            with slots.hold(call("a", "198.51.100.9"), "busy"):
                pass


@pytest.mark.parametrize("env, hops", [({}, 0), ({"SPACE_ID": "someone/space"}, 1),
                                       ({"SPACE_ID": "someone/space", "TBT_TRUSTED_PROXIES": "2"}, 2),
                                       ({"TBT_TRUSTED_PROXIES": "many"}, 0), ({"TBT_TRUSTED_PROXIES": "-3"}, 0)])
def test_the_declared_hops_and_the_space_default(monkeypatch, env, hops):
    for name in ("SPACE_ID", "TBT_TRUSTED_PROXIES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert environment.trusted_proxies() == hops == ClientSlots().hops


def test_a_local_caller_s_forwarded_header_writes_no_address(monkeypatch):
    """uvicorn believes X-Forwarded-For from this machine unless told otherwise, and rewrites the
    connection's address before the app sees it. The app's start (ui/host/peers.py)
    tells it to believe nobody: two local sessions sending one forged address are two clients, each
    with its slot; a host that names its proxies in FORWARDED_ALLOW_IPS keeps that."""
    import asyncio

    import uvicorn

    from ui.host.peers import keep_peer_addresses
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "unset below")
    monkeypatch.delenv("FORWARDED_ALLOW_IPS")            # as on a host that never set it; restored after

    def seen_by_the_app(session: str) -> SimpleNamespace:
        """A request from this machine carrying the forged header, through uvicorn's own middleware."""
        seen = {}

        async def app(scope, receive, send):
            seen["client"] = scope["client"]
        config = uvicorn.Config(app=app)
        config.load()
        scope = {"type": "http", "client": ("127.0.0.1", 50000), "scheme": "http",
                 "headers": [(b"x-forwarded-for", b"203.0.113.9")]}
        asyncio.run(config.loaded_app(scope, None, None))
        return call(session, "203.0.113.9", peer=seen["client"][0])
    assert seen_by_the_app("a").client.host == "203.0.113.9"      # uvicorn's default: the header wrote it
    keep_peer_addresses()
    first, second = seen_by_the_app("a"), seen_by_the_app("b")
    assert first.client.host == "127.0.0.1"
    slots = ClientSlots(hops=0)
    with slots.hold(first, "busy"), slots.hold(second, "busy"):    # both served
        pass
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")       # the host's own word stands
    keep_peer_addresses()
    assert seen_by_the_app("c").client.host == "203.0.113.9"


def test_calls_without_a_session_share_neither_a_slot_nor_a_stop_flag():
    """A direct call (no gr.Request) was the one "anonymous" client: a second such call was refused
    while the first ran, and its new run set the first one's Stop flag ("a new run from the same tab
    ends the previous one")."""
    from ui.host.runs import StopFlags
    slots, flags = ClientSlots(hops=0), StopFlags()
    with slots.hold(None, "busy"), slots.hold(None, "busy"):
        pass
    with flags.running(None) as first, flags.running(None) as second:
        flags.stop_tab(None)                              # no tab to stop
        assert not first.is_set() and not second.is_set() and len(flags) == 2
    assert len(flags) == 0
    with flags.running(call("a")) as first, flags.running(call("a")) as second:   # one tab: the new run wins
        assert first.is_set() and not second.is_set()
