"""Control-flow primitives whose parameters hold traced Programs (JAX's cond, while and scan):
their bodies are traced once, so a program does not grow with the trip count.

- ``programs``: tracing functions into closed bodies, and the body transformations the rules
  share (joint jvp bodies, batched bodies, running a body in the current trace);
- ``cond``, ``while_loop``, ``scan``: the primitives and their rules; ``scan_transpose``:
  reverse mode of a scan (partial evaluation into a forward and a reversed scan).

The user-facing functions (argument checks, pytrees) are spmd/lax/control.py's.
"""
