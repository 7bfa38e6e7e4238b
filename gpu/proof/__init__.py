"""The machinery that proves a kernel before it is emitted: the kernel IR with its one
printer and its obligations (:mod:`~layoutproof.gpu.proof.kir`), lowering of layouts to C
index expressions (:mod:`~layoutproof.gpu.proof.lower`), the shared-memory bank model
(:mod:`~layoutproof.gpu.proof.banks`), the model checkers of the mbarrier pipeline and of
split-K's serial reduction, and the record of discharged obligations."""
