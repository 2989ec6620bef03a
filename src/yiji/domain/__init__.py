"""Pure rules: no I/O, no clock reads; every function takes plain values and ``now``."""
