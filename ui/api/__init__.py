"""The documented API, declared with `gr.api`: typed functions whose signatures are the endpoints,
one file per endpoint (arguments checked in args.py).

    /trace       a prompt (and settings) in, the Trace JSON file out                    trace.py
    /compare     one question in normal and reasoning mode, both Trace files out         compare.py
    /fork        a trace file, a step and a token in: the trace with a new branch out,   fork.py
                 continued from that step with that token on the run's cached prefix
    /profile     a trace file and a step in: where its time went, op by op                profile.py
    /export      a trace file and a chart's name in: the chart as SVG or PNG             export.py
    /serve       a serving-floor workload in: the figures and the Floor file out         serve.py
    /read_trace  a trace file in, a one-line summary out (read as the page's upload)     status.py
    /status      runs in progress, the models offered, the caps                          status.py

Every setting defaults to the engine's own default (`Settings()`), so
`client.predict(prompt="...", api_name="/trace")` is enough. `model` picks one of the host's
allowed models ("" is the host's default). A caller that sends `Accept-Language: zh` is answered
in Chinese. One client (its session, and its address where the host's proxy forwards one) holds at
most one run at a time (ui/host/runs.py).
"""

from __future__ import annotations

from ui.api.compare import CompareEndpoint
from ui.api.export import ExportEndpoint
from ui.api.fork import ForkEndpoint
from ui.api.profile import ProfileEndpoint
from ui.api.serve import ServeEndpoint
from ui.api.status import StatusEndpoints
from ui.api.trace import TraceEndpoint
from ui.host.runs import TraceFiles


def declare(models) -> None:
    """Every endpoint, inside the page's gr.Blocks."""
    files = TraceFiles()          # the traces /trace, /compare and /fork return, the oldest deleted first
    for endpoint in (TraceEndpoint(models, files), CompareEndpoint(models, files), ForkEndpoint(models, files),
                     ProfileEndpoint(models), ExportEndpoint(models), StatusEndpoints(models), ServeEndpoint(models)):
        endpoint.declare()
