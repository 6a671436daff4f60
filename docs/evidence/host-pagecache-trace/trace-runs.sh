#!/bin/bash
# Host measurement for issue 10: memcg reclaim calls and the worker's scheduling, SW10 vs SW150.
# Usage: flock /work/notes/host.lock trace-runs.sh WORKLOAD.toml OUTDIR  (root; tracefs is
# mounted if it is not, and unmounted after; its clock and buffer size are put back).
WORKLOAD=$1; OUT=$2
set -u
T=/sys/kernel/tracing
mounted=0
if ! mountpoint -q $T; then mount -t tracefs nodev $T && mounted=1; fi
clk0=$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock); buf0=$(cat $T/buffer_size_kb)
EV="vmscan/mm_vmscan_memcg_reclaim_begin vmscan/mm_vmscan_memcg_reclaim_end vmscan/mm_vmscan_lru_shrink_inactive vmscan/mm_vmscan_lru_shrink_active sched/sched_switch sched/sched_wakeup"
cleanup() {
  echo 0 > $T/tracing_on
  for e in $EV; do echo 0 > $T/events/$e/enable; done
  echo > $T/trace
  echo $clk0 > $T/trace_clock; echo $buf0 > $T/buffer_size_kb
  echo 1 > $T/tracing_on
  [ $mounted = 1 ] && umount $T
}
trap cleanup EXIT
echo 0 > $T/tracing_on
echo mono > $T/trace_clock; echo 65536 > $T/buffer_size_kb
for e in $EV; do echo 1 > $T/events/$e/enable; done
for i in 1 2 3; do for sw in 10 150; do
  echo > $T/trace; echo 1 > $T/tracing_on
  swaplab host run "$WORKLOAD" --set kernel.swappiness=$sw --json "$OUT"/r-$sw-$i.json -q
  echo 0 > $T/tracing_on
  cat $T/trace > "$OUT"/t-$sw-$i.txt
  grep -c . "$OUT"/t-$sw-$i.txt; grep -c "overrun\|LOST" "$OUT"/t-$sw-$i.txt
done; done
