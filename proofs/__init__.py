"""layoutproof.proofs: the theorem catalog. Arrives with the catalog issue."""
