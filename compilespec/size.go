package compilespec

import "github.com/ptekit/ptekit/internal/size"

// The size functions are internal/size's, given here to library users
// (package internal/size cannot be imported from outside the module).

// SizeError reports a size that ParseSize does not accept: Input is the
// text as given, Reason what is wrong with it.
type SizeError = size.Error

// ParseSize reads a byte count written for humans: a plain decimal byte
// count ("8589934592"), a number with a unit ("8GiB", "512 MiB", "1.5GiB",
// "8Gi", "8GB") or "auto" (auto == true: no budget key, the engine
// chooses). Binary units are powers of 1024 in any case, decimal units
// powers of 1000; forms that could be either ("8G", "8gb") are refused
// with a hint. Errors are *SizeError.
func ParseSize(s string) (bytes int64, auto bool, err error) { return size.Parse(s) }

// FormatSize returns n in the shortest form ParseSize reads back as exactly
// n ("8 GiB", "1.5 GiB", "1 GB", "123 B").
func FormatSize(n int64) string { return size.Format(n) }

// AddSizes returns the sum of byte counts, saturating at math.MaxInt64 (and
// math.MinInt64) instead of wrapping.
func AddSizes(sizes ...int64) int64 { return size.Add(sizes...) }

// FormatSizeApprox returns n for people to read at a glance: plain bytes
// below 1 KiB ("512 B"), else one decimal in the largest binary unit it
// reaches ("1.5 KiB", "8.0 EiB").
func FormatSizeApprox[T ~int64 | ~uint64 | ~int | ~uint32](n T) string { return size.FormatApprox(n) }

// DescribeSize shows a byte count people may need exactly: the bytes, then
// FormatSize's form ("1073741824 bytes (1 GiB)"), or FormatSizeApprox's
// when there is no short exact one ("9223372036854775807 bytes (about
// 8.0 EiB)").
func DescribeSize(n int64) string { return size.Describe(n) }
