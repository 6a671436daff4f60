"""Samples /proc/vmstat zswap/swap counters and zswap debugfs every 10 ms until killed."""
import sys, time, signal
out = open(sys.argv[1], 'w')
keys = ('zswpout', 'zswpin', 'zswpwb', 'pswpout', 'pswpin', 'swpout_zero')
dbg = '/sys/kernel/debug/zswap/'
dk = ('pool_limit_hit', 'pool_total_size', 'stored_pages', 'written_back_pages', 'reject_reclaim_fail')
stop = False
def h(*a):
    global stop; stop = True
signal.signal(signal.SIGTERM, h)
out.write('t ' + ' '.join(keys + dk) + '\n')
while not stop:
    t = time.monotonic()
    v = {}
    for line in open('/proc/vmstat'):
        k, x = line.split()
        if k in keys: v[k] = x
    row = [v.get(k, '0') for k in keys]
    for k in dk:
        try: row.append(open(dbg + k).read().strip())
        except OSError: row.append('-')
    out.write('%.4f ' % t + ' '.join(row) + '\n')
    time.sleep(0.02)
out.close()
