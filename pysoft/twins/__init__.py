"""The NumPy twins of the C kernels: one module per C file (``csrc/src/<file>.c``),
same names without ``ps_``, same arguments.

Each twin is the readable definition of its kernel; ``csrc/`` is the fast
one. Arrays are the Store's: positions, velocities and forces ``(n, dim)``
float64, per-particle scalars ``(n,)``, index pairs ``(m, 2)`` int32 rows.
They may be longer than the counts (the Store binds capacity-sized
buffers): twins read and write only the first ``n`` / ``m`` / ``b`` rows.
Written arrays are modified in place, as in C. Each twin evaluates the same
expressions in the same order as its kernel (see the essays at the top of
the C files), so the parity tests can ask for identical bits.
"""
