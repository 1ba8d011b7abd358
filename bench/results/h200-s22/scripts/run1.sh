# Run 1: 8 ranks where there are 4 GPUs (kilnCommCreateShared: two ranks per GPU, CUDA peer
# memory, no NCCL): the symmetric kernels' 8-rank code (LL, LL128, two-shot, the flag form in
# rounds), the plans shipped for 8 GPUs (plans/n8, plans/n8/synth), the classic and synthesized
# 8-rank plans, every dtype and op against the CPU; then the usual suites on 4 and 2 GPUs after
# the communicator's set-up was split (commAlloc) and the tests' data bounds for 8 ranks.
RUN=r1 . scripts/device-pre.sh
for t in sym_kernels_8ranks_shared n8_plans_8ranks_shared synthesized_plans_8ranks_shared sym_ll128_8ranks_shared \
         classic_plans_8ranks_shared; do
  suite $t 200 $t
  grep -h -E "^\[(PASS|FAIL|SKIP)|left out|plans of plans|calls checked|ranks on" $R/$t.txt | head -12
done
suite regular 200 'sym_kernels_4gpus|sym_kernels_2gpus|baked_plans_4gpus|synthesized_plans_4gpus|one_process_per_gpu|two_communicators'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/regular.txt | sed 's/.*:://' | paste -sd' '
