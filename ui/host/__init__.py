"""What the house keeps for every visitor: models, runs, uploads, errors, ZeroGPU, the recordings."""
