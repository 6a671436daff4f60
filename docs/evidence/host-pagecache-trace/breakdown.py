"""Where a traced host run's time goes: the worker's time on CPU, runnable and asleep in its
timed region, and its memcg reclaim calls (trace-runs.sh writes OUTDIR/t-SW-I.txt and
OUTDIR/r-SW-I.json). Usage: python3 breakdown.py OUTDIR

The timed region starts where the worker's longest sleep-free stretch before its first
reclaim call starts (the first pass over the anonymous working set faults but never sleeps)
and lasts the run's elapsed_ns; its run-queue time must match the worker's schedstat figure
in the JSON, which the output prints side by side as the check. The per-page fit uses the
calls that reclaimed exactly one 32-page folio in under 200 us."""
import bisect
import json
import re
import statistics
import sys

import numpy as np

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$')


def fields(text):
    return dict(re.findall(r'(\w+)=(\S+)', text))


def events(path):
    for line in open(path):
        m = LINE.match(line)
        if m:
            yield float(m[4]), int(m[2]), m[5], fields(m[6])


def cpu_states(evs, pid):
    """(start, end, 'cpu'|'runq'|'sleep') spans of one task from sched_switch/sched_wakeup."""
    state, since, spans = None, None, []
    for t, _, name, f in evs:
        if name == 'sched_switch':
            if int(f['prev_pid']) == pid:
                if since is not None:
                    spans.append((since, t, 'cpu'))
                state, since = ('runq' if f['prev_state'].startswith('R') else 'sleep'), t
            if int(f['next_pid']) == pid:
                if since is not None and state:
                    spans.append((since, t, state))
                state, since = 'cpu', t
        elif name == 'sched_wakeup' and int(f['pid']) == pid and state == 'sleep':
            spans.append((since, t, 'sleep'))
            state, since = 'runq', t
    return spans


def in_window(spans, lo, hi, ends=None):
    """Time of each state between lo and hi; `ends` (the spans' sorted end times) skips the
    spans that end before lo."""
    out = {'cpu': 0.0, 'runq': 0.0, 'sleep': 0.0}
    first = bisect.bisect_left(ends, lo) if ends else 0
    for a, b, s in spans[first:]:
        if a >= hi:
            break
        out[s] += max(0.0, min(b, hi) - max(a, lo))
    return out


def reclaim_calls(evs, pid):
    """Per call: (begin, end, file scanned, anon scanned, active taken, reclaimed)."""
    calls, cur = [], None
    for t, p, name, f in evs:
        if p != pid:
            continue
        if name == 'mm_vmscan_memcg_reclaim_begin':
            cur = [t, 0.0, 0, 0, 0, 0]
        elif cur is None:
            continue
        elif name == 'mm_vmscan_lru_shrink_inactive':
            cur[3 if 'ANON' in f['flags'] else 2] += int(f['nr_scanned'])
        elif name == 'mm_vmscan_lru_shrink_active':
            cur[4] += int(f['nr_taken'])
        elif name == 'mm_vmscan_memcg_reclaim_end':
            cur[1], cur[5] = t, int(f['nr_reclaimed'])
            calls.append(tuple(cur))
            cur = None
    return calls


def one_run(trace, result):
    evs = list(events(trace))
    task = json.load(open(result))['tasks'][0]
    pid = next(p for _, p, n, _ in evs if n == 'mm_vmscan_memcg_reclaim_begin')
    calls = reclaim_calls(evs, pid)
    spans = cpu_states(evs, pid)
    sleeps = [s for s in spans if s[2] == 'sleep' and s[1] < calls[0][0]]
    _, start = max((nxt[0] - cur[1], cur[1]) for cur, nxt in zip(sleeps, sleeps[1:]))
    region = in_window(spans, start, start + task['elapsed_ns'] / 1e9)
    inside = {'cpu': 0.0, 'runq': 0.0, 'sleep': 0.0}
    ends = [s[1] for s in spans]
    for c in calls:
        for k, v in in_window(spans, c[0], c[1], ends).items():
            inside[k] += v
    return task, region, inside, calls


def main(out):
    rows = []
    for sw in (10, 150):
        for i in (1, 2, 3):
            task, region, inside, calls = one_run(f'{out}/t-{sw}-{i}.txt', f'{out}/r-{sw}-{i}.json')
            wall = [c[1] - c[0] for c in calls]
            print(f"SW{sw} run {i}: elapsed {task['elapsed_ns'] / 1e9:.2f} s, run-queue wait "
                  f"{task['runqueue_wait_ns'] / 1e9:.3f} s (schedstat) / {region['runq']:.3f} s (trace); "
                  f"on CPU {region['cpu']:.3f} s, asleep {region['sleep']:.3f} s; {len(calls)} reclaim calls, "
                  f"{sum(wall):.3f} s inside (on CPU {inside['cpu']:.3f}, runnable {inside['runq']:.3f}, "
                  f"asleep {inside['sleep']:.3f}), median {statistics.median(wall) * 1e6:.1f} us, "
                  f"anon scanned {sum(c[3] for c in calls)}")
            rows += [(c[1] - c[0], c[2], c[3], c[4], c[5], sw) for c in calls]
    r = np.array(rows, dtype=float)
    one_folio = (r[:, 4] == 32) & (r[:, 0] < 200e-6)
    x = np.column_stack([np.ones(one_folio.sum()), r[one_folio, 2], r[one_folio, 3]])
    coef, *_ = np.linalg.lstsq(x, r[one_folio, 0], rcond=None)
    print(f"fit over {one_folio.sum()} of {len(r)} calls (one 32-page folio reclaimed): "
          f"{coef[0] * 1e6:.2f} us + {coef[1] * 1e9:.0f} ns per anon page scanned + "
          f"{coef[2] * 1e9:.0f} ns per active file page taken")
    for sw in (10, 150):
        sel = one_folio & (r[:, 5] == sw)
        none = sel & (r[:, 2] == 0)
        print(f"SW{sw}: such a call median {np.median(r[sel, 0]) * 1e6:.1f} us, mean "
              f"{r[sel, 0].mean() * 1e6:.1f} us, anon scanned per call {r[sel, 2].mean():.1f}; "
              f"with no anon page scanned median {np.median(r[none, 0]) * 1e6:.1f} us")


if __name__ == '__main__':
    main(sys.argv[1])
