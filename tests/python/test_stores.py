"""Fronting stores through the CLI: the zswap example runs (scaled down), its table shows the
zswap debugfs counters and its JSON the zswap vmstat counters and the store section."""

import json

from conftest import run_cli

SMALLER = ["--set", 'machine.ram="160MiB"', "--set", 'task.0.mapping.0.size="192MiB"',
           "--set", "task.0.phase.1.touches=20000"]


def test_zswap_example_reports_the_store(tmp_path):
    out = tmp_path / "z.json"
    proc = run_cli("run", "examples/zswap.toml", *SMALLER, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "zswap (debugfs" in proc.stdout and "reject_compress_poor" in proc.stdout, proc.stdout
    raw = json.loads(out.read_text())
    vm, store = raw["vmstat"], raw["store"]
    assert store["name"] == "zswap" and store["pool_pages_max"] > 0
    assert vm["zswpout"] > 0 and vm["swpout_zero"] > 0
    # A fifth of the pages do not compress: rejected, so written to the device, as are the
    # pages refused at the pool limit and those written back.
    assert store["debugfs"]["reject_compress_poor"] > 0
    assert vm["pswpout"] >= store["debugfs"]["reject_compress_poor"] + vm["zswpwb"]
    assert raw["config"]["zswap"]["compressor"] == "lz4"
