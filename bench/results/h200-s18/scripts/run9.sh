# s18 run 9: where an eager 2-GPU call's host time goes on this host: host_bench (the driver's
# launch with and without programmatic serialization, with and without the event), and eager
# coll_bench with KILN_SYM_PDL=0 against the default, three times alternating.
RUN=r9 . scripts/device-pre.sh
for i in 1 2; do CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/host_bench --gpus 2 > $R/host_$i.txt 2>&1; done
pack
E="--colls allreduce,allgather --min 8 --max 32K --factor 4 --batch --iters 200 --warmup 20"
for i in 1 2 3; do
  for v in pdl nopdl; do
    env CUDA_VISIBLE_DEVICES=0,1 $([ $v = nopdl ] && echo KILN_SYM_PDL=0) timeout 40 $B/coll_bench --ranks 2 $E \
      --csv $R/e2_${v}_$i.csv > $R/e2_${v}_$i.txt 2>&1
  done
  pack
done
cat $R/host_1.txt; grep -h "thr\|t/G\|thread" $R/host_2.txt
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
echo "== eager: PDL against KILN_SYM_PDL=0 (nopdl/pdl)"
(cd bench && $PY ab.py $R/e2_pdl_*.csv -- $R/e2_nopdl_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}')
for f in $R/e2_*.csv; do echo "$(basename $f): $(awk -F, 'NR>1 {printf "%s:%s/%s ", substr($1,1,4), $22, $10}' $f)"; done
