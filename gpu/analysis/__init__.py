"""Analyses of a user's own kernel layouts: shared-memory bank conflicts per instruction
phase, global-memory coalescing, TMA pre-flight, index width and swizzle synthesis, each
proved, refuted with a witness, or unknown with the reason."""
