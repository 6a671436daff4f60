"""swaplab report in a real headless browser (Chromium from the distribution's packages; the
test installs it with apt-get when it is missing, and fails — not skips — when it cannot).

For each kind of result (run, sweep, reproduce, compare): the page loads with no console
message at all (the page has no script; a failed fetch or a script error would log one), it
references nothing outside itself, every plot is drawn (each SVG holds data marks with a
non-empty box, measured by the browser), and a screenshot is kept in tests/artifacts/.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

ARTIFACTS = ROOT / "tests" / "artifacts"

# Appended to a copy of the page: the browser measures every plot's data marks after layout.
CHECKER = """<script>
window.addEventListener("load", () => {
  const plots = [...document.querySelectorAll("svg.plot")].map((svg) => {
    const marks = [...svg.querySelectorAll(".m")];
    const drawn = marks.filter((m) => { const b = m.getBBox(); return b.width > 0 || b.height > 0; });
    const r = svg.getBoundingClientRect();
    return {title: svg.getAttribute("aria-label"), marks: marks.length, drawn: drawn.length,
            width: r.width, height: r.height};
  });
  const pre = document.createElement("pre");
  pre.id = "plotcheck";
  pre.textContent = JSON.stringify(plots);
  document.body.appendChild(pre);
});
</script>"""


def _chromium():
    exe = shutil.which("chromium")
    if exe:
        return exe
    if os.geteuid() != 0:
        pytest.fail("the report test needs Chromium (/usr/bin/chromium): run as root to let it install "
                    "it, or `apt-get install chromium` first")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
        if proc.returncode != 0 and cmd[1] == "install":
            pytest.fail(f"apt-get install chromium failed: {proc.stderr.strip()[-500:]}")
    exe = shutil.which("chromium")
    if not exe:
        pytest.fail("apt-get installed chromium but there is no chromium on PATH")
    return exe


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = _chromium()
    profile = tmp_path_factory.mktemp("chromium-profile")

    def run(url_path, *args, timeout=120):
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
               "--enable-logging=stderr", "--v=0", *args, Path(url_path).resolve().as_uri()]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return run


def _console(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _check_page(browser, html, tmp_path, expected_plots, name):
    text = html.read_text()
    # self-contained: nothing to fetch (the only URL is the SVG namespace)
    assert not re.search(r"""\b(src|href)\s*=|@import|url\(""", text), "the page references an outside resource"
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    probe = tmp_path / f"{name}-probe.html"
    probe.write_text(text.replace("</body>", CHECKER + "</body>"))
    proc = browser(probe, "--virtual-time-budget=5000", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _console(proc.stderr) == [], _console(proc.stderr)
    m = re.search(r'<pre id="plotcheck">(.*?)</pre>', proc.stdout, re.S)
    assert m, "the page did not finish loading"
    plots = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert len(plots) == expected_plots
    for p in plots:
        assert p["width"] > 200 and p["height"] > 80, p
        assert p["drawn"] >= 1 and p["drawn"] == p["marks"], p   # every data mark has a box
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"report-{name}.png"
    if shot.exists():
        shot.unlink()
    proc = browser(html, "--window-size=1400,2200", f"--screenshot={shot}")
    assert proc.returncode == 0 and _console(proc.stderr) == [], proc.stderr[-2000:]
    assert shot.stat().st_size > 20000   # a real picture, not a blank page
    return plots


def _report(tmp_path, result, name, *extra):
    out = tmp_path / f"{name}.html"
    proc = run_cli("report", result, "-o", out, *extra)
    assert proc.returncode == 0, proc.stderr
    n = int(re.search(r"\((\d+) plots\)", proc.stdout).group(1))
    return out, n


def test_browser_check_catches_console_errors(browser, tmp_path):
    """The check above can fail: a page with a script error logs to the console."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    proc = browser(bad, "--virtual-time-budget=2000", "--dump-dom")
    assert any("undefinedFunction" in line for line in _console(proc.stderr)), proc.stderr[-2000:]


def test_run_report(browser, tmp_path):
    result = tmp_path / "run.json"
    assert run_cli("run", ROOT / "examples" / "quick.toml", "--json", result, "--quiet").returncode == 0
    html, n = _report(tmp_path, result, "run", "--png", tmp_path / "png")
    plots = _check_page(browser, html, tmp_path, n, "run")
    titles = {p["title"] for p in plots}
    for t in ("Free memory and swap use", "LRU list sizes", "Touch latency CDF per task", "Fault latency CDF per task",
              "Swap readahead hit rate (per sample interval)"):
        assert t in titles
    pngs = sorted(os.listdir(tmp_path / "png"))
    assert len(pngs) == n and all((tmp_path / "png" / p).stat().st_size > 5000 for p in pngs)


def test_sweep_report(browser, tmp_path):
    w = tmp_path / "w.toml"
    w.write_text((ROOT / "examples" / "quick.toml").read_text())
    g = tmp_path / "grid.toml"
    g.write_text(f'workload = "{w}"\nname = "look"\n[axes]\nkernel.page_cluster = [0, 1, 2, 3]\n'
                 'kernel.swappiness = [10, 60, 100]\nseeds = [1, 2]\n')
    proc = run_cli("sweep", g, "--out", tmp_path / "store", "--quiet")
    assert proc.returncode == 0, proc.stderr
    html, n = _report(tmp_path, tmp_path / "store", "sweep")
    plots = _check_page(browser, html, tmp_path, n, "sweep")
    titles = {p["title"] for p in plots}
    assert "elapsed_s by kernel.page_cluster" in titles
    assert any(t.startswith("elapsed_s: kernel.swappiness × kernel.page_cluster") for t in titles)
    heat = next(p for p in plots if p["title"].startswith("elapsed_s: "))
    assert heat["drawn"] == 12   # one cell per (page_cluster, swappiness)


def test_reproduce_report(browser, tmp_path):
    out = tmp_path / "rep.json"
    proc = run_cli("reproduce", "hugh2012-ssd", "--scale", "8", "--json", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    html, n = _report(tmp_path, out, "reproduce")
    plots = _check_page(browser, html, tmp_path, n, "reproduce")
    assert n == 1 and plots[0]["drawn"] == 2 * 12   # published and simulated bar of 12 cells


def test_compare_report(browser, tmp_path):
    """A simulator-vs-host comparison measured on a real kernel (docs/evidence/)."""
    src = ROOT / "docs" / "evidence" / "host-vma-ra-loop.json"
    html, n = _report(tmp_path, src, "compare")
    doc = json.loads(src.read_text())
    plots = _check_page(browser, html, tmp_path, n, "compare")
    per_cell = [p for p in plots if p["title"].endswith("relative error per counter")]
    assert len(per_cell) == len(doc["cells"])
    # `swaplab compare WORKLOAD --json` writes one cell's shape: {"sim", "host", "comparison"}
    one = tmp_path / "one.json"
    one.write_text(json.dumps(next(iter(doc["cells"].values()))))
    html, n = _report(tmp_path, one, "compare-one")
    plots = _check_page(browser, html, tmp_path, n, "compare-one")
    assert [p["title"] for p in plots] == ["Relative error per counter"]
