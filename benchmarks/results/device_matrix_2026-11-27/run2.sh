#!/usr/bin/env bash
# The second call (after run.sh's cnn and lib cells ran out of time): those two again with longer limits.
CELLS="cnn-loopback:125 lib-loopback:150" exec bash "$(dirname "$0")/run.sh"
