// Package compilespec reads and writes the compile specs that a .pte file
// stores on each backend delegate, with the meaning the TensorRT delegate
// gives them.
//
// A compile spec is a key and opaque value bytes (pte.CompileSpec). ExecuTorch
// stores them verbatim and hands them to the backend's init at load time. The
// functions Find, Get, Set and Delete work on a delegate's spec list and
// report duplicated keys as a *DuplicateKeyError rather than silently picking
// one, because backends differ in how they treat duplicates (the TensorRT
// delegate refuses to load a delegate whose weight_streaming_budget appears
// twice).
//
// Two keys are well known:
//
//   - KeyWeightStreamingBudget ("weight_streaming_budget"): the per-engine GPU
//     weight budget in bytes, as ASCII decimal. FormatBudget writes the
//     canonical form; ParseBudget reads a value exactly as the deployed C++
//     delegate does (std::from_chars over the whole value); ParseBudgetOption
//     reads a load-time string option the way the delegate sees it after
//     ExecuTorch stored it in a fixed char buffer.
//   - KeyTargetDevice ("target_device"): "cuda:N", read ahead of time by
//     ExecuTorch's device propagation pass (ParseTargetDevice) and not at all
//     by the runtime, which uses the blob's device_id; CheckTargetDevice
//     reports when the two disagree.
//
// ParseSize and FormatSize convert between byte counts and the human forms
// used on command lines and in configuration ("8GiB", "1.5 GiB", "8GB",
// "auto").
package compilespec
