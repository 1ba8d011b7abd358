# Run 3: the library with a kernel per kind of op for the line forms (kernels/sym.cuh
# kernelIndexOf: sum and avg fixed at compile time, the other ops by selects) against the
# committed build (5ef21db, coll_bench_A). The suites that run the line forms (every dtype, op, in
# and out of place; 8 ranks sharing the GPUs), then A/B through the library, graphs, three
# alternations on 4 GPUs (float), two on 2 GPUs, one with bfloat16; then LL12 from 8 KiB of segment
# against the default (32 KiB), same build.
RUN=r3 . scripts/device-pre.sh
suite t 240 'sym_kernels_4gpus|sym_kernels_2gpus|sym_ll12_4gpus|sym_ll12_2gpus|sym_ll128_4gpus|sym_ll128_2gpus|sym_lines_apart|sym_choice|sym_kernels_8ranks_shared'
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
abruns 3 4 --ranks 4 --graph 10 --iters 20 --warmup 5 --factor 4 --min 16 --max 1M
ab A4 B4
abruns 2 2 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 4 --min 16 --max 1M
ab A2 B2
abruns 1 4h --ranks 4 --graph 10 --iters 20 --warmup 5 --factor 4 --min 64 --max 1M --dtype bfloat16 --colls allreduce,reducescatter
ab A4h B4h
envab 2 4l KILN_SYM_LL12_BYTES=8192 --ranks 4 --graph 10 --iters 20 --warmup 5 --factor 2 --min 8K --max 128K
ab A4l B4l
grep -h " e[1-9]\|WRONG\|rror" $R/*.txt | head -5
for f in $R/B4_1.csv $R/B2_1.csv; do rows $f; done
