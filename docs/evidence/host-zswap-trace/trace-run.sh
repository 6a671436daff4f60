#!/bin/bash
# One host run of the zswap writeback row with the shrink worker traced (issue 15 evidence,
# host-zswap.md "2026-11-26 16:00"). Run as root inside `flock /work/notes/host.lock`:
#     trace-run.sh OUTDIR [PRESET]
# Records: tracefs workqueue events of shrink_worker (queue, start, end: every run of the
# worker and its duration), vmscan memcg reclaim begin/end, reclaim_throttle; and every 20 ms
# /proc/vmstat's swap counters and /sys/kernel/debug/zswap (sampler.py). Puts everything back:
# events off, filters cleared, buffer size as found, max_pool_percent 20, tracefs and debugfs
# unmounted (this VM mounts neither). The function tracer is not permitted on this kernel, so
# the worker is seen through the workqueue events (filtered on shrink_worker's address).
set -u
OUT=$1; PRESET=${2:-docs/evidence/host-pagecache-calibration-cpu.toml}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
mkdir -p "$OUT"; cd "$REPO"
T=/sys/kernel/tracing
mount -t tracefs nodev $T; mount -t debugfs none /sys/kernel/debug
FN=0x$(awk '$3 == "shrink_worker" {print $1; exit}' /proc/kallsyms)
B=$(awk '{print $1}' $T/buffer_size_kb); echo 0 > $T/tracing_on; echo > $T/trace
echo 32768 > $T/buffer_size_kb
for e in workqueue_queue_work workqueue_execute_start workqueue_execute_end; do
  echo "function == $FN" > $T/events/workqueue/$e/filter; echo 1 > $T/events/workqueue/$e/enable; done
for e in mm_vmscan_memcg_reclaim_begin mm_vmscan_memcg_reclaim_end mm_vmscan_throttled; do
  echo 1 > $T/events/vmscan/$e/enable; done
echo 1 > /sys/module/zswap/parameters/max_pool_percent
uptime > "$OUT/uptime.txt"
echo 1 > $T/tracing_on
python3 "$HERE/sampler.py" "$OUT/samples.txt" & SP=$!
swaplab host run experiments/workloads/host-zswap.toml --zswap --swap-backend loop --runs 1 \
   --set 'task.0.mapping.0.size="1280MiB"' --set 'swap.0.size="2GiB"' \
   --set 'task.0.phase.1.pattern="random"' --set task.0.phase.1.cycles=1 \
   --set "swap.0.device=\"calibrated:$PRESET\"" \
   --set swap.0.params.queue_nonrot=true --json "$OUT/host.json" > "$OUT/host.txt" 2>&1
kill $SP; wait $SP
echo 0 > $T/tracing_on
uptime >> "$OUT/uptime.txt"
cat $T/trace > "$OUT/trace.txt"; grep -h overrun $T/per_cpu/cpu*/stats >> "$OUT/uptime.txt"
echo 0 > $T/events/enable
for e in workqueue_queue_work workqueue_execute_start workqueue_execute_end; do echo 0 > $T/events/workqueue/$e/filter; done
echo "$B" > $T/buffer_size_kb; echo > $T/trace
echo 20 > /sys/module/zswap/parameters/max_pool_percent
umount /sys/kernel/debug; umount $T
echo "after: zswap enabled $(cat /sys/module/zswap/parameters/enabled), max_pool_percent $(cat /sys/module/zswap/parameters/max_pool_percent), swaps $(swapon --show | wc -l), loops $(losetup -a | wc -l), trace/debug mounts $(mount | grep -c -E 'tracefs|debugfs')" >> "$OUT/uptime.txt"
