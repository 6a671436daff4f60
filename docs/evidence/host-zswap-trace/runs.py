"""Summarise a trace-run.sh directory: shrink_worker runs (count, duration) and the memcg's
reclaim passes per half second. Usage: python3 runs.py OUTDIR"""
import collections
import re
import statistics
import sys

EVENT = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):')


def events(path):
    for line in open(path):
        m = EVENT.search(line)
        if m and not line.startswith('#'):
            yield float(m.group(4)), m.group(1) + '-' + m.group(2), m.group(5)


def main(d):
    ev = list(events(d + '/trace.txt'))
    t0 = ev[0][0]
    starts = [t for t, _, e in ev if e == 'workqueue_execute_start']
    ends = [t for t, _, e in ev if e == 'workqueue_execute_end']
    durs = [b - a for a, b in zip(starts, ends)]
    queued = sum(1 for _, _, e in ev if e == 'workqueue_queue_work')
    print(f'shrink_worker: queued {queued}, runs {len(starts)}, median run {1e6 * statistics.median(durs):.1f} us, '
          f'longest {1e3 * max(durs):.1f} ms')
    runs = collections.defaultdict(lambda: [0, 0.0])
    for a, dur in zip(starts, durs):
        k = int((a - t0) * 2) / 2
        runs[k][0] += 1
        runs[k][1] += dur
    passes = collections.defaultdict(lambda: [0, 0.0])
    begin = {}
    for t, who, e in ev:
        if e == 'mm_vmscan_memcg_reclaim_begin':
            begin[who] = t
        elif e == 'mm_vmscan_memcg_reclaim_end' and who in begin:
            k = int((t - t0) * 2) / 2
            passes[k][0] += 1
            passes[k][1] += t - begin.pop(who)
    print('   t(s)  worker runs  run time(ms)  reclaim passes  reclaim time(ms)')
    for k in sorted(set(runs) | set(passes)):
        print(f'{k:7.1f} {runs[k][0]:12d} {1e3 * runs[k][1]:13.1f} {passes[k][0]:15d} {1e3 * passes[k][1]:17.1f}')


if __name__ == '__main__':
    main(sys.argv[1])
