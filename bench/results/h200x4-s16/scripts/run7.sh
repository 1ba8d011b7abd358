# s16 run 7: run 6 on the library after the second review (kernelOf names every form, null for
# none; the bodies chosen with if constexpr; no change to any kernel meant), graphs to 64 KiB.
RUN_NAME=r7 G2_MAX=64K exec bash bench/results/h200x4-s16/scripts/run6.sh
