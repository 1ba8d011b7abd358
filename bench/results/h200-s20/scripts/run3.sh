# s20 run 3: the rest of the 4-GPU suites on the new library (copy engine, graphs, streams, large
# buffers, empty blocks), and graphs 16-256 KiB, A = the old library, B = the new, three times
# alternating (run 2's allgather 64 KiB: one of two B runs 3.80 us, the other 2.90, A 2.93 / 2.90).
RUN=r3 . scripts/device-pre.sh
suite rest 200 'sym_direct_copy_engine|graph_replays|several_streams|large_buffers|sym_empty_blocks|sym_lines_apart|plan_ll_stale_slots'
grep -h -E "^\[PASS\]" $R/rest.txt | sed 's/.*:://' | paste -sd' '
G="--graph 10 --iters 10 --warmup 3 --factor 4 --min 16K --max 256K"
for i in 1 2 3; do
  timeout 60 $B/coll_bench_old --ranks 4 $G --csv $R/A4_$i.csv > $R/A4_$i.txt 2>&1
  timeout 60 $B/coll_bench --ranks 4 $G --csv $R/B4_$i.csv > $R/B4_$i.txt 2>&1
  pack
done
ab A4 B4
grep -h " e[1-9]" $R/*.txt | head -5
