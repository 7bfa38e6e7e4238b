"""layoutproof.verify: functional equality, side conditions and proofs (Z3/SMT). Arrives with the symbolic issue."""
