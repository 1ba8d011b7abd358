# Run 3 (2x H200): the host's cost per CUDA call on this machine (bench/host_bench), 2 GPUs and 1.
. scripts/device-pre.sh >/dev/null 2>&1
timeout 60 .carry/bin/host_bench --gpus 2 --iters 20000
timeout 60 .carry/bin/host_bench --gpus 1 --iters 20000 | tail -20
