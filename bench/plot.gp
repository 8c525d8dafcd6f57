# plot.gp — draws the Redis benchmark's plots from the data files that
# bench_redis writes (memory.dat, throughput.dat, and plotvars.gp with their
# column counts).  Usage: gnuplot -e "dir='bench/results'" bench/plot.gp
if (!exists("dir")) dir = "bench/results"
load dir."/plotvars.gp"
set datafile separator "\t"
set terminal pngcairo size 960,560 font "sans,10"
set key outside right top
set grid

# Memory per item against history size, both axes logarithmic.
set output dir."/memory.png"
set title "Memory per item (MEMORY USAGE / items): 24-byte ids, error 0.001"
set logscale xy
set xlabel "items in the history"
set ylabel "bytes per item"
set xrange [70:140000]
set format x "%.0f"
plot dir."/memory.dat" using 1:2 with lines dt 2 lc rgb "black" title columnheader(2), \
     for [c=3:nmem] dir."/memory.dat" using 1:c with linespoints lw 2 pt 7 title columnheader(c)

# Candidates/s per method, one bar per history size.
set output dir."/throughput.png"
unset logscale
unset xrange
set logscale y
set title "Batch queries of ".batch." candidates (10% seen): candidates per second of server CPU (one core to itself)"
set xlabel ""
set ylabel "candidates per server CPU-second"
set format y "%.0s%c"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -30 left
set bmargin 10
set rmargin 18
plot for [c=2:nthr] dir."/throughput.dat" using c:xtic(1) title columnheader(c)
