"""The differential suite (issue 22): every public spmd.numpy, spmd.nn and spmd.lax slicing
function against NumPy over hypothesis-generated inputs.

- ``generate``: dtypes, values, shapes, axes, Python scalars and placements (eager, jit, meshes).
- ``compare``: one ``Call`` run on NumPy and on spmd in one placement, and the comparison.
- ``signatures``/``signatures_more``/``signatures_namespace``: the table, one ``Sig`` per public
  function saying how to draw a valid (or now and then invalid) call of it; ``EXCLUDED`` lists
  what is left out, and why.

``tests/test_differential.py`` runs the table; its docstring says how to run longer searches.
"""
