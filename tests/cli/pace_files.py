#!/usr/bin/env python3
"""Create files in DIR at RATE per second for SECONDS, paced by CLOCK_MONOTONIC (not by sleeps
that drift), or in bursts: BURST files at once every 1/RATE*BURST seconds. Prints the files made
and the seconds taken, so a test compares with the rate it really got."""
import os
import sys
import time

directory, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
burst = int(sys.argv[4]) if len(sys.argv) > 4 else 1
start = time.monotonic()
made = 0
while True:
    due = start + made / rate
    if due - start >= seconds:
        break
    now = time.monotonic()
    if due > now:
        time.sleep(due - now)
    for _ in range(burst):
        open(os.path.join(directory, "f%d" % made), "w").close()
        made += 1
print(made, "%.3f" % (time.monotonic() - start))
