"""The dense cells' maths (core.models.RecurrentNet): one kernel per cell, reached through its cell's
``kernel()`` (core/cells/). A kernel names its torch module (the parameters' layout), runs its row forward into
buffers and its BPTT by hand (the interface: core.bptt), and takes one time step under autograd (the unrolled
reference engine)."""
