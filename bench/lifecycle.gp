# lifecycle.gp — memory per user over the simulated days, one line per
# design, from lifecycle.dat (bench/lifecycle.py).
# Usage: gnuplot -e "dir='bench/results'" bench/lifecycle.gp
if (!exists("dir")) dir = "bench/results"
set datafile separator "\t"
set terminal pngcairo size 960,560 font "sans,10"
set output dir."/lifecycle.png"
set title "Memory per user over a fleet's life (MEMORY USAGE, fleet average)"
set key outside right top
set grid
set logscale y
set xlabel "simulated day"
set ylabel "bytes per user"
plot for [c=2:4] dir."/lifecycle.dat" using 1:c with linespoints lw 2 pt 7 title columnheader(c)
