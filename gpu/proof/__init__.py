"""The machinery that proves a kernel before it is emitted: the kernel IR with its one
printer (:mod:`~layoutproof.gpu.proof.kir`), the IR's C semantics
(:mod:`~layoutproof.gpu.proof.evaluate`), the obligations computed from the IR tree
(:mod:`~layoutproof.gpu.proof.obligations`), lowering of layouts to C index expressions
(:mod:`~layoutproof.gpu.proof.lower`), the shared-memory bank model
(:mod:`~layoutproof.gpu.proof.banks`), the model checkers of the mbarrier pipeline and of
split-K's serial reduction (:mod:`~layoutproof.gpu.proof.pipeline`,
:mod:`~layoutproof.gpu.proof.splitk_model`, both searching with
:mod:`~layoutproof.gpu.proof.statespace`), and the record of discharged obligations
(:mod:`~layoutproof.gpu.proof.record`, built on :mod:`layoutproof.outcome`)."""
