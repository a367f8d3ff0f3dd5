"""Execute compiled models: arenas, tasks stream by stream, reference kernels (RT1/RT2 semantics)."""
