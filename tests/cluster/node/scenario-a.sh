# shellcheck shell=bash
# Scenario (a): a memory hog in a Deployment (tests/cluster/node/hog.sh).
hog_evicted
