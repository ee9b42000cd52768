# Runs inside the guest (chrooted into the host's root over 9p) by run-guest: every path of
# schedlab-scx against the real kernel, then the yield probe under EEVDF, fifo and vtime.
set -u
B="$1"  # the build directory
L="$B/schedulers/schedlab-scx"
D="$B/schedulers"
Y="$B/schedulers/yieldprobe"
S=/sys/kernel/sched_ext
echo "state before: $(cat $S/state), enable_seq $(cat $S/enable_seq)"
for s in fifo vtime; do
  "$L" "$D/$s.bpf.o" & pid=$!
  sleep 3
  echo "root/ops while $s is attached: $(cat $S/root/ops)"
  kill -TERM $pid; wait $pid; echo "$s rc=$?"
done
"$L" "$D/fifo.bpf.o" & pid=$!
sleep 2
echo "a second loader while fifo is attached:"; "$L" "$D/vtime.bpf.o"; echo "rc=$?"
kill -TERM $pid; wait $pid
echo "broken:"; "$L" "$D/broken.bpf.o"; echo "broken rc=$?"
echo "sysrq-S while vtime is attached:"
"$L" "$D/vtime.bpf.o" & pid=$!
sleep 2; echo S >/proc/sysrq-trigger; wait $pid; echo "vtime rc=$?"
echo "EEVDF: $("$Y")"
for s in fifo vtime; do
  "$L" "$D/$s.bpf.o" >/dev/null & pid=$!
  sleep 2
  echo "$s ($(cat $S/root/ops)): $("$Y")"
  kill -TERM $pid; wait $pid
done
echo "EEVDF again: $("$Y")"
echo "state after: $(cat $S/state), enable_seq $(cat $S/enable_seq)"
