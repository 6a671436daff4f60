"""``swaplab run --lru-gen-dump``: MGLRU's generations in the /sys/kernel/debug/lru_gen format."""

import re

from conftest import SMALL, run_cli

MGLRU = SMALL.replace('name = "small"', 'name = "small"\n[kernel]\nreclaim = "mglru"\n[sim]\nsample_interval = "5ms"')
ROW = re.compile(r"^ {1}[ \d]{10} [ \d]{10} [ \d]{10}  [ \d]{10} $")


def test_dump_prints_one_debugfs_block_per_sample(write_toml):
    p = write_toml(MGLRU)
    proc = run_cli("run", p, "--lru-gen-dump", "--quiet")
    assert proc.returncode == 0, proc.stderr
    blocks = proc.stdout.split("# t = ")[1:]
    assert len(blocks) >= 5, proc.stdout[:500]
    for b in blocks:
        lines = b.splitlines()
        assert lines[1] == "memcg 1 /" and lines[2] == " node     0", lines[:3]
        rows = lines[3:]
        assert 2 <= len(rows) <= 4 and all(ROW.match(r) for r in rows), rows
        seqs = [int(r.split()[0]) for r in rows]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    # Under pressure the 64 MiB of anon pages sit in the generations (less what was swapped out).
    last = [list(map(int, r.split())) for r in blocks[-1].splitlines()[3:]]
    assert sum(r[2] for r in last) > 0


def test_dump_needs_mglru(small_toml):
    proc = run_cli("run", small_toml, "--lru-gen-dump")
    assert proc.returncode == 2 and "mglru" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
