"""One bandwidth and FLOP/s measurement per host (engine/lab/host.py): taken once, then the same for
the lab's roofline, its batching frontier and the profile; another process's adopted only when it
names this host, device and dtype."""

from engine.lab import host


def test_the_host_is_measured_once_and_another_hosts_figures_are_refused(monkeypatch):
    calls = []
    monkeypatch.setattr(host, "_KNOWN", {})
    monkeypatch.setattr(host, "read_bandwidth", lambda device, mb, repeats: calls.append("bw") or 30e9)
    monkeypatch.setattr(host, "matmul_flops", lambda device, dtype, n, repeats: calls.append("flops") or 180e9)
    first = host.figures("cpu", "float32")
    assert host.figures("cpu", "torch.float32") is first and calls == ["bw", "flops"]     # once
    assert first["host"] == host.host_name("cpu") and first["dtype"] == "float32"
    assert not host.adopt({**first, "bandwidth_bytes_s": 1e9})          # this process has its own already
    assert not host.adopt({**first, "host": "another machine", "dtype": "bfloat16"})      # not this host
    assert host.adopt({**first, "dtype": "bfloat16", "bandwidth_bytes_s": 29e9})          # this host, bf16
    assert host.known("cpu", "bfloat16")["bandwidth_bytes_s"] == 29e9 and calls == ["bw", "flops"]
    assert not host.adopt(None) and not host.adopt({"host": first["host"]})              # nothing measured
