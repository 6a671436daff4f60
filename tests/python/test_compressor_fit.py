"""``swaplab calibrate``'s compressor fit (python/swaplab/host/compressor_cost.py) without the
host: measurements in the simulator's form give back the figures they were made from."""

from swaplab.host.compressor_cost import PAGE, SIZES, fit


def synthetic(compress_ns, decompress_ns, full_cost_bytes, write0=3000.0, read0=2000.0, copy=300.0):
    def scaled(full, n):
        return full * min(1.0, n / full_cost_bytes)
    return {"compressor": "lzo", "sizes": list(SIZES),
            "write_cpu_ns": [write0 + (scaled(compress_ns, n) if n else 0.0) for n in SIZES],
            "read_cpu_ns": [read0 + (copy if n == PAGE else scaled(decompress_ns, n) if n else 0.0) for n in SIZES]}


def test_the_fit_recovers_the_figures_of_proportional_costs():
    f = fit(synthetic(2400.0, 900.0, PAGE))
    assert f == {"compressor": "lzo", "compress_ns": 2400, "decompress_ns": 900, "full_cost_bytes": PAGE}


def test_the_zero_page_is_the_baseline_and_the_full_pass_is_the_page_that_does_not_compress():
    m = synthetic(2400.0, 900.0, PAGE, write0=9000.0, read0=7000.0)
    f = fit(m)
    assert f["compress_ns"] == 2400 and f["decompress_ns"] == 900
    # costs flat in the compressed size: the proportional form puts the full cost within the sizes measured
    flat = {"compressor": "lz4", "sizes": list(SIZES), "write_cpu_ns": [100.0] + [1100.0] * (len(SIZES) - 1),
            "read_cpu_ns": [100.0] * len(SIZES)}
    g = fit(flat)
    assert g["compress_ns"] == 1000 and 512 <= g["full_cost_bytes"] <= 3072, g
