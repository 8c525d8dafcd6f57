# written by bench_redis for plot.gp
nmem = 6
nthr = 5
batch = "10,000"
