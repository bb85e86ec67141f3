"""Who a caller is: the connection's own address, unless the host names the proxies in front.

uvicorn believes X-Forwarded-For (and -Proto) from this machine by default (its FORWARDED_ALLOW_IPS,
"127.0.0.1,::1") and rewrites the connection's address from it before the app sees it, so any local
caller, or a local proxy passing the header on, would write the address the per-client limit keys on
(ui/host/runs.ClientSlots). The app's start tells uvicorn to believe nobody unless the host named its
proxies there itself: the app sees the raw peer, and X-Forwarded-For is read by ClientSlots alone,
behind TBT_TRUSTED_PROXIES (docs/hosting.md)."""

from __future__ import annotations

import os


def keep_peer_addresses() -> None:
    """Before the server starts: uvicorn's FORWARDED_ALLOW_IPS is "" (nobody) unless the host set it."""
    os.environ.setdefault("FORWARDED_ALLOW_IPS", "")
