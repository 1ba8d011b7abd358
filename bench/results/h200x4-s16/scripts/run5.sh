# s16 run 5: run 4 again, the same pack, on another machine (asked for 4x H100, got 4x H200): the
# library as committed, its suites, the drop-in, torchrun, the tables and the A/B against session 15.
RUN_NAME=r5 exec bash bench/results/h200x4-s16/scripts/run4.sh
