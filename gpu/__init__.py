"""layoutproof.gpu: MMA/copy atoms, proven lowering, CuPy runtime. Arrives with the GPU issue."""
