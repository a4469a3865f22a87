"""The Attention Lab server (app.main builds it).

One setting has to be made before PyTorch loads, so it is made here, when the package is first
imported: OpenMP's wait policy. After each parallel op, the threads of PyTorch's intra-op pool
(GNU OpenMP) spin on a core for a while before they sleep. A model call ends with small parallel ops
(the maps, the top-k), and on a 2-core machine that spinning then holds the core that the event
loop, gzip and the client need to hand the answer over: ~1.9 ms from the end of the computation to
the handler resuming, measured inside the server. Passive threads sleep at once. Interleaved, two
servers on one 2-core machine (docs/SERVER.md): /api/attention 0.90x the time, /api/compare 0.93x,
the page's keystroke -> update 153 and 150 ms against 158 and 155 ms. A value set in the
environment is kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # libgomp reads it once, when torch loads it
