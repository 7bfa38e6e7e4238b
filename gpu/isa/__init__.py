"""The hardware as data: PTX fragment tables, MMA and copy atoms, the SM90 wgmma atoms and
their shared-memory layouts and matrix descriptors, and TiledMMA / TiledCopy built from them.

Each atom is a set of layouts of the algebra, checked against an independent encoding of
the PTX ISA (:mod:`~layoutproof.gpu.isa.ptx_tables`)."""
