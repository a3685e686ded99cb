"""``python -m ddpsim COMMAND ...``, the same entry as the ``ddpsim`` console script.

This is also the entry for multi-node runs under torchrun::

    torchrun --nnodes 2 --nproc-per-node 1 --rdzv-endpoint HOST:29500 -m ddpsim bench-allreduce --sizes 1M:64M

Commands see torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), join the group from them, gather results on rank 0, and only
rank 0 prints and writes. Without those variables the commands spawn their
own ranks.
"""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C in the first fraction of a second: no traceback
    sys.stderr.write("ddpsim: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
