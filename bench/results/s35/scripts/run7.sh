# Run 7 (2x H200): the drop-in under an unchanged PyTorch, last run under torchrun in session 26
# (host/ changed since: sessions 27-34): scripts/device-shim.sh on 2 GPUs (the drop-in's GPU suite
# under the real NCCL 2.28.9, then bench/torch_collectives.py under torchrun --nproc-per-node 2:
# PyTorch's own NCCL, the shim disabled, the shim; float32 and bfloat16, 1 KiB-64 MiB, every
# collective PyTorch exposes, each result checked exactly), then PyTorch's symmetric memory through
# the drop-in (bench/torch_symm_mem.py: windows registered at rendezvous, zero copy, checked).
RUN=r7 . scripts/device-pre.sh
t0=$(date +%s)
OUT=$R/shim GPUS=2 timeout 420 scripts/device-shim.sh > $R/shim.txt 2>&1
echo "device-shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -E "GPU suite|BAD|exit [1-9]" $R/shim.txt | head -8
tail -40 $R/shim/table.txt
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$RN TORCH_SYMMMEM=NCCL KILN_DEBUG=INFO timeout -k 10 150 \
  /opt/torch/.venv/bin/python -m torch.distributed.run --nproc-per-node 2 bench/torch_symm_mem.py > $R/symm.txt 2>&1
echo "symm rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -E "exact|Error|error" $R/symm.txt | head -6
grep -h "^kiln:" $R/symm.txt | sed 's/ pid [0-9]*:/:/' | sort | uniq -c | sort -rn | head -8
cat $OUT/gpus.txt
