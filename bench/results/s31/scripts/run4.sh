# Run 4 (2x H200: a 2-GPU kind was lent at the end of the session): the final build against NCCL
# 2.28.9 in the same process and call (one process, graphs of 10), 16 B-1 GiB, every collective;
# the staged form's change over NVLink (A = edd01e3, the session's start; B = this build, ABAB)
# at 4 MiB-1 GiB; the drop-in's GPU suite (not run since session 27); GPU suites on the 2 GPUs.
RUN=r4 . scripts/device-pre.sh
t0=$(date +%s)
G="--graph 10 --iters 10 --warmup 3 --factor 4"
timeout 90 $B/coll_bench --ranks 2 $G --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1; echo "g2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
abruns 2 big --ranks 2 --graph 10 --iters 10 --warmup 3 --colls allreduce,reducescatter,allgather,alltoall --min 4M --max 1G
echo "ab done ($(( $(date +%s) - t0 )) s)"
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 150 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(PASS|FAIL)|Synthesis" $R/shim.txt | sed 's/.*:://' | paste -sd' '
suite t 200 'sym_kernels_2gpus|sym_rounds|sym_pdl|sym_choice|one_process_per_gpu|calls_of_a_form_the_plan_does_not_claim_refused|failed_communicator_refuses_calls|supports_and_load_errors|baked_plans_2gpus|synthesized_plans_2gpus' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
echo "suites done ($(( $(date +%s) - t0 )) s)"
cat $OUT/gpus.txt
ab Abig Bbig
echo "== g2 (size kiln/nccl speedup errors)"; rows $R/g2.csv
