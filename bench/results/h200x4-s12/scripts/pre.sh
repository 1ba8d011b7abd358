# Session 12's device calls use session 10's preamble unchanged: unpack the carried build, the
# environment (NCCL 2.28.9 from PyTorch's venv, NVLS off), $L for logs, $B the benchmark, and the
# helpers behind, big and cmp.
. bench/results/h200x4-s10/scripts/pre.sh
