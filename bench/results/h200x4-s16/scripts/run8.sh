# s16 run 8: run 7 again on the library after the last review (the LL forms' load-first sends in
# one helper, sendLines; no kernel change meant).
RUN_NAME=r8 G2_MAX=64K exec bash bench/results/h200x4-s16/scripts/run6.sh
