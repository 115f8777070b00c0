# Clustered bars: best sections/s per implementation and workload.
set terminal pngcairo size 900,480 font ",10"
set output outfile
set title "Lock sections per second (2 cores, one redis-server, 8 processes)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "sections / s"
set key top right
set grid ytics
set xtics rotate by -20
plot datafile using 2:xtic(1) title columnheader(2), \
     '' using 3 title columnheader(3), \
     '' using 4 title columnheader(4)
