# Run 4 (2x H200): scripts/quickstart.sh's steps on GPUs, by hand (the device has neither apt
# nor GLPK for quickstart's set-up and build; the kiln CLI and coll_bench come built from here):
# the hgx-h100 allreduce synthesized and verified, then `kiln profile` of the 2 GPUs, an allreduce
# synthesized for the measured topology from the switch2 sketch, and that plan run beside NCCL
# (coll_bench --plans, outputs checked), 8 B-64 MiB, as quickstart runs it.
RUN=r4 . scripts/device-pre.sh
t0=$(date +%s)
K=$B/kiln
q=$R/quickstart
mkdir -p $q
{ $K synth --topo hgx-h100 --sketch plans/sketches/hgx-h100.xml --coll allreduce -o $q/allreduce-hgx-h100.xml &&
  $K verify $q/allreduce-hgx-h100.xml &&
  for size in 1K 1M 1G; do $K simulate --topo hgx-h100 --bytes $size $q/allreduce-hgx-h100.xml; done; } > $q/cpu.txt 2>&1
echo "cpu steps rc=$? ($(( $(date +%s) - t0 )) s)"; tail -4 $q/cpu.txt
timeout 120 $K profile --gpus 2 --uniform -o $q/local.xml > $q/profile.txt 2>&1; echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"
cat $q/profile.txt | tail -5
timeout 120 $K synth --topo $q/local.xml --sketch plans/sketches/switch2.xml --coll allreduce --max-tbs 64 -o $q/allreduce-local.xml > $q/synth.txt 2>&1
echo "synth rc=$?"; cat $q/synth.txt | tail -4
timeout 120 $B/coll_bench --ranks 2 --colls allreduce --plans $q/allreduce-local.xml --min 8 --max 64M --csv $q/allreduce-local.csv > $q/bench.txt 2>&1
echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"; pack
cat $q/bench.txt | tail -18
cat $OUT/gpus.txt
