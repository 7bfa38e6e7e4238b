"""layoutproof.verify: functional equality, side conditions and proofs (Z3/SMT).

Its contents arrive with the symbolic-layouts issue.
"""
