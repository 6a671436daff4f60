"""A user's mistake: exit status 2 and exactly one line on stderr naming the problem; never a
traceback, never an output file."""

import pytest

from conftest import SMALL, run_cli


def assert_user_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    assert len(err.splitlines()) == 1, f"expected one line, got:\n{proc.stderr}"
    assert err.startswith("swaplab: error: "), err
    for n in needles:
        assert n in err, f"{n!r} not in {err!r}"
    return err


CASES = {
    # name: (file text, extra args, substrings the message must contain)
    "unknown key": (SMALL.replace('ram = "96MiB"', 'ram = "96MiB"\nramm = 3'), [], ["w.toml:6", "ramm"]),
    "wrong type": (SMALL.replace("cpus = 2", 'cpus = "two"'), [], ["w.toml:4", "cpus"]),
    "zero-page mapping": (SMALL.replace('size = "64MiB"', "size = 0"), [], ["w.toml", "task.0.mapping.0.size", "zero pages"]),
    "negative size": (SMALL.replace('size = "64MiB"', 'size = -5'), [], ["w.toml", "negative"]),
    "unknown policy in file": (SMALL.replace('name = "small"', 'name = "small"\n[kernel]\nreadahead = "smart"'),
                               [], ["w.toml", "kernel.readahead", "smart"]),
    "unknown policy by --set": (SMALL, ["--set", "kernel.readahead=smart"], ["kernel.readahead", "smart"]),
    "unknown reclaim policy": (SMALL, ["--set", 'kernel.reclaim="lru2"'], ["kernel.reclaim"]),
    "ram below reserve": (SMALL.replace('ram = "96MiB"', 'ram = "32MiB"'), [], ["w.toml", "machine.ram", "reserve"]),
    "unknown device": (SMALL.replace('device = "sata-ssd"', 'device = "floppy"'), [], ["w.toml", "floppy"]),
    "not toml": ("this is [not toml", [], ["w.toml"]),
    "no task": (SMALL.split("[[task]]")[0], [], ["w.toml", "task"]),
    "unknown compressor": (SMALL + '\n[zswap]\nenabled = true\ncompressor = "gzip"\n', [], ["w.toml", "zswap.compressor", "gzip"]),
    "missing content histogram": (SMALL, ["--set", "zswap.enabled=true", "--set", 'content.model="histogram"',
                                          "--set", 'content.histogram="nope.txt"'], ["content.histogram", "nope.txt"]),
    "zswap and frontswap": (SMALL, ["--set", "zswap.enabled=true", "--set", 'frontswap.capacity="1MiB"'], ["cannot both"]),
    "kv value beyond the largest slab chunk": (SMALL.replace('pattern = "sequential"', 'pattern = "kv-get"\nkeys = 100\nvalue_size = "1MiB"'),
                                               [], ["w.toml", "task.0.phase.0.value_size", "largest chunk"]),
    "kv slab mapping too small": (SMALL.replace('pattern = "sequential"', 'pattern = "kv-set"\nkeys = 100000\nvalue_size = 2000'),
                                  [], ["w.toml", "task.0.mapping.0.size", "needs 232783872 bytes"]),
    "kv parameter on a plain phase": (SMALL.replace("cycles = 2", "cycles = 2\npipeline = 8"), [], ["task.0.phase.0.pipeline", "kv phases"]),
    "iodepth without buffered reads": (SMALL.replace("cycles = 2", "cycles = 2\niodepth = 4"), [], ["task.0.phase.0.iodepth", "syscall"]),
    "ramp not shorter than the run": (SMALL.replace('name = "seq"', 'name = "seq"\ntime_limit = "1s"\nramp_time = "2s"'),
                                      [], ["task.0.ramp_time", "shorter"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_workload_exits_2_with_one_line(case, write_toml, tmp_path):
    text, extra, needles = CASES[case]
    out = tmp_path / "out.json"
    proc = run_cli("run", write_toml(text), *extra, "--json", out)
    assert_user_error(proc, *needles)
    assert not out.exists()
    assert proc.stdout == ""


def test_missing_file(tmp_path):
    assert_user_error(run_cli("run", tmp_path / "nope.toml"), "nope.toml", "no such file")


@pytest.mark.parametrize("bad", ["kernel.page_cluster", "=3", "kernel..x=1"])
def test_bad_set_syntax(small_toml, bad):
    assert_user_error(run_cli("run", small_toml, "--set", bad), "--set")


def test_set_index_out_of_range(small_toml):
    assert_user_error(run_cli("run", small_toml, "--set", "task.5.name=x"), "out of range")


def test_json_onto_a_directory(small_toml, tmp_path):
    assert_user_error(run_cli("run", small_toml, "--json", tmp_path), "is a directory")


def test_json_below_a_file(small_toml, tmp_path):
    assert_user_error(run_cli("run", small_toml, "--json", small_toml / "out.json"), "cannot create directory")


def test_unknown_experiment():
    assert_user_error(run_cli("reproduce", "no-such-experiment"), "no-such-experiment")


def test_reproduce_bad_scale():
    assert_user_error(run_cli("reproduce", "--all", "--scale", "0"), "--scale")


def test_no_command_is_usage_error():
    proc = run_cli()
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    import swaplab

    assert proc.stdout.strip() == f"swaplab {swaplab.__version__}"
