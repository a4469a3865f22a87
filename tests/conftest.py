import torch

# The suite's models are tiny: one intra-op thread is as fast as two for them, and it stops the
# test processes (and the uvicorn servers they start) from fighting over the machine's 2 cores.
torch.set_num_threads(1)
