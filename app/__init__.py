"""The Attention Lab server (app.main builds it).

One setting has to be made before PyTorch loads, so it is made here, when the package is first
imported: OpenMP's wait policy. After each parallel op, the threads of PyTorch's intra-op pool
(GNU OpenMP) spin on a core for a while before they sleep. A model call ends with small parallel ops
(the maps, the top-k), and on a machine with few cores that spinning then holds the core that the
event loop, gzip and the client need to hand the answer over, which delays every answer. Passive
threads sleep at once (the measurements are in docs/SERVER.md). A value set in the environment is
kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # libgomp reads it once, when torch loads it
