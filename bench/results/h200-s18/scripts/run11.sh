# s18 run 11 (4 GPUs): the committed library's code (the pack of runs 9-10) on 4 GPUs: the 4-GPU
# suites, and graphs 4 GPUs 16 B-1 MiB once; the LL kernel alone on 4 GPUs (sym_probe) at 16 and
# 64 B (reducescatter and alltoall 16 B took ~0.5 us more than 64 B in every 4-GPU table).
RUN=r11 . scripts/device-pre.sh
suite tests4 200 'sym_kernels_4gpus|sym_pdl|sym_streams|sym_rounds|sym_group_peers|sym_graph_replays|sym_empty_blocks|sym_choice|graph_replays|groups|several_streams|two_communicators|one_process_per_gpu|sym_missing_peer_times_out'
grep -h -E "^\[PASS\]" $R/tests4.txt | sed 's/.*:://' | paste -sd' '
timeout 40 $B/coll_bench --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1M --csv $R/g4.csv > $R/g4.txt 2>&1
pack
for cb in rs:16 rs:64 a2a:16 a2a:64 ag:16 ag:64 ar:16 ar:64 ar:65536; do $B/sym_probe ${cb%:*} ${cb#*:} 4; done > $R/sym.txt 2>&1
pack
rows $R/g4.csv
cat $R/sym.txt
