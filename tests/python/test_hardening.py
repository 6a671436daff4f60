"""One error type, no tracebacks (issue 14, items 9-12): every user mistake is one line and exit
2 from the CLI, and a ``ConfigError`` with the same message from the API."""

import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import swaplab
from swaplab import ConfigError

from conftest import run_cli


def _exit_2(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_resolve_of_a_non_utf8_file_is_one_line(tmp_path, small_toml):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(open(small_toml, "rb").read() + b"\n# \xff\xfe\n")
    _exit_2(run_cli("resolve", bad), "not UTF-8")
    with pytest.raises(ConfigError, match="not UTF-8"):
        swaplab.resolve(str(bad))


def test_dev_zero_and_a_fifo_as_workload_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in (("/dev/zero", "character device"), (fifo, "FIFO"), (tmp_path, "directory")):
        _exit_2(run_cli("run", path), what)
        _exit_2(run_cli("resolve", path), what)
        with pytest.raises(ConfigError, match=what):
            swaplab.simulate(str(path))


def test_calibrated_in_a_comment_and_a_bom_go_through_the_one_parser(tmp_path, small_toml):
    text = "\ufeff# try device = \"calibrated:host\" one day\n" + open(small_toml).read()
    p = tmp_path / "bom.toml"
    p.write_text(text, encoding="utf-8")
    proc = run_cli("resolve", p)
    assert proc.returncode == 0, proc.stderr


def test_deeply_nested_arrays_are_one_line(tmp_path, small_toml):
    p = tmp_path / "deep.toml"
    p.write_text(open(small_toml).read() + "\nx = " + "[" * 50000 + "]" * 50000 + "\n")
    _exit_2(run_cli("resolve", p))
    deep = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(ConfigError):
        swaplab.simulate({"machine": deep})


def test_set_replacing_a_whole_table_is_refused(small_toml):
    _exit_2(run_cli("resolve", small_toml, "--set", "machine={ram=\"1GiB\"}"), "replacing it whole")


def test_time_limit_zero_is_refused(small_toml):
    _exit_2(run_cli("run", small_toml, "--set", "sim.time_limit=0"), "sim.time_limit")


def test_empty_json_path_is_refused_not_ignored(small_toml):
    _exit_2(run_cli("run", small_toml, "--json", ""), "empty path")


def test_api_mistakes_raise_config_error_with_the_cli_message(tmp_path, small_toml):
    for bad in (123, None, str(tmp_path / "missing.toml"), str(tmp_path), ""):
        with pytest.raises(ConfigError):
            swaplab.simulate(bad)
    with pytest.raises(ConfigError, match="UTF-8"):
        swaplab.resolve(small_toml, ["name=\"\udcff\""])
    with pytest.raises(ConfigError):
        swaplab.resolve(small_toml, [1, 2])
    with pytest.raises(ConfigError):
        swaplab.resolve({"machine": {"ram": object()}})
    proc = run_cli("resolve", tmp_path / "missing.toml")
    try:
        swaplab.resolve(str(tmp_path / "missing.toml"))
    except ConfigError as e:
        assert str(e) in proc.stderr, (str(e), proc.stderr)


def test_a_progress_callback_that_raises_propagates():
    class Boom(Exception):
        pass

    def progress(ns, fraction):
        raise Boom("from the callback")

    big = os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "workloads", "vm-scalability-combined.toml")
    with pytest.raises(Boom):
        swaplab.simulate(big, progress=progress)


_KEYS = st.sampled_from(["machine.ram", "kernel.page_cluster", "swap.0.size", "task.0.phase.0.pattern", "sim.time_limit",
                         "kernel", "task.0.mapping.0.size", "swap.0.device", "seed", "costs.minor_fault_ns"])
_VALUES = st.one_of(st.integers(), st.floats(allow_nan=True), st.text(max_size=12), st.booleans(),
                    st.lists(st.integers(), max_size=3), st.just("calibrated:nope"), st.just({"page_cluster": 0}))


@settings(max_examples=int(os.environ.get("SWAPLAB_FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overrides=st.dictionaries(_KEYS, _VALUES, max_size=3), junk=st.text(max_size=30))
def test_api_resolve_raises_only_config_error(small_toml, overrides, junk):
    """Hypothesis over the Python API: random overrides (as a dict and as strings) never give
    anything but a resolved config or ConfigError."""
    for ovs in (overrides, [junk], [f"{k}={junk}" for k in overrides]):
        try:
            swaplab.resolve(small_toml, ovs)
        except ConfigError as e:
            assert "\n" not in str(e)


def test_deeply_nested_arrays_with_runs_and_as_an_experiment_are_one_line(tmp_path, small_toml):
    deep = "\nx = " + "[" * 50000 + "]" * 50000 + "\n"
    p = tmp_path / "deep.toml"
    p.write_text(open(small_toml).read() + deep)
    _exit_2(run_cli("run", p, "--runs", "2", "--quiet"))
    e = tmp_path / "exp.toml"
    e.write_text('[experiment]\nname = "x"\n' + deep)
    _exit_2(run_cli("reproduce", e, "--quiet"), "nested too deeply")
