"""The program layer: abstract values, primitives, tracing, the Program IR and its interpreter."""
