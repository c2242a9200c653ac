// Package export builds ExecuTorch programs (.pte) whose methods run
// serialized TensorRT engines through the TensorRTBackend delegate, and
// re-bakes the weight streaming budget of existing programs.
package export
