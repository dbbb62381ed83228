"""Closed-loop workloads (issue 29): jobs whose ranks run collective operations and
point-to-point exchanges with MPI's dependencies.

- :mod:`.rounds` -- the shape of an expansion (rounds of sends and receives per rank);
- the collective algorithms, one per module, pure functions: :mod:`.ring` (allreduce,
  allgather, reduce-scatter), :mod:`.doubling` (recursive-doubling allreduce),
  :mod:`.pairwise` (all-to-all), :mod:`.binomial` (broadcast), :mod:`.dissemination`
  (barrier), :mod:`.stencil` (2-D / 3-D halo);
- :mod:`.spec` -- :class:`JobSpec`, :class:`OpSpec`, :class:`Step`;
- :mod:`.program` -- a job's operations as every rank's steps;
- :mod:`.posted` -- the generator of a job's queue pair;
- :mod:`.rank` -- the rank's state machine; :mod:`.install` -- ranks on a built fabric.
"""
