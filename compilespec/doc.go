// Package compilespec reads and writes the compile specs that a .pte file
// stores on each backend delegate, with the meaning the TensorRT delegate
// gives them.
//
// A compile spec is a key and opaque value bytes (pte.CompileSpec). ExecuTorch
// stores them verbatim and hands them to the backend's init at load time.
// Find, Get, Budget, Set and Delete compare keys as the C++ backends do, as C
// strings (a key ends at its first NUL), so they give the answers the
// deployed runtime and ptekit's commands give. Get and Budget report a
// duplicated key as a *DuplicateKeyError rather than silently picking one
// (the TensorRT delegate refuses a delegate whose weight_streaming_budget
// appears twice); Set leaves exactly one entry and keeps upstream key order.
//
// Two keys are well known:
//
//   - KeyWeightStreamingBudget ("weight_streaming_budget"): the per-engine GPU
//     weight budget in bytes, as ASCII decimal. Budget is the one form every
//     package carries it in: ParseBudgetSize reads it from a flag or a
//     manifest ("4GiB", "auto"), SpecBudget and ParseBudgetSpec from compile
//     specs exactly as the deployed C++ delegate does (std::from_chars over
//     the whole value, see ParseBudget), Spec writes the canonical value,
//     String and Describe show it, Total adds it up over engines.
//     ParseBudgetOption reads a load-time string option the way the
//     delegate sees it after ExecuTorch stored it in a fixed char buffer.
//   - KeyTargetDevice ("target_device"): "cuda:N", read ahead of time by
//     ExecuTorch's device propagation pass (ParseTargetDevice) and not at all
//     by the runtime, which uses the blob's device_id; CheckTargetDevice
//     reports when the two disagree.
//
// The size functions (ParseSize, FormatSize, FormatSizeApprox, AddSizes,
// DescribeSize) are internal/size's, given here to library users.
package compilespec
