package compilespec

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/ptekit/ptekit/internal/quote"
	"github.com/ptekit/ptekit/internal/size"
	"github.com/ptekit/ptekit/pte"
)

// MaxOptionStringLen is the longest load-time string option value ExecuTorch
// keeps: BackendOptions stores a string option in a NUL-terminated
// char[256], so set_option copies at most 255 bytes and the terminating NUL.
// The TensorRT delegate then measures the stored value with
// strnlen(value, 256), which always stops at that NUL.
const MaxOptionStringLen = 255

// ErrEmptyBudgetOption is returned by ParseBudgetOption for an empty string
// option. The TensorRT delegate logs such an option as an error and then
// ignores it, falling through to the compile spec; it does not fail the load.
var ErrEmptyBudgetOption = errors.New("compilespec: weight_streaming_budget option is empty and is ignored")

// BudgetError reports a weight_streaming_budget value that the TensorRT
// delegate rejects (its init then fails with InvalidProgram).
type BudgetError struct {
	// Value is the rejected value (after the option truncation of
	// ParseBudgetOption, when it applies).
	Value []byte
	// Off is the byte offset in Value of the first offending byte, or -1
	// when the value as a whole is at fault (empty, negative, too large).
	Off int
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *BudgetError) Error() string {
	at := ""
	if e.Off >= 0 {
		at = fmt.Sprintf(" at byte %d", e.Off)
	}
	return fmt.Sprintf("compilespec: invalid weight_streaming_budget %s: %s%s (want ASCII decimal digits, 0 to 9223372036854775807)",
		quote.Bytes(e.Value), e.Reason, at)
}

// ParseBudget parses a weight_streaming_budget value exactly as the deployed
// TensorRT delegate does (std::from_chars into int64 over the whole value):
// an optional single leading '-', then one or more ASCII digits (any number of
// leading zeros), nothing else; the value must fit in int64 and be >= 0, so
// "-0" and "-00" are accepted as 0 while "-1" is not. A '+' sign, spaces,
// NUL bytes, non-ASCII digits and an empty value are rejected. Errors are
// *BudgetError.
func ParseBudget(v []byte) (int64, error) {
	fail := func(off int, reason string) (int64, error) {
		return 0, &BudgetError{Value: v, Off: off, Reason: reason}
	}
	if len(v) == 0 {
		return fail(-1, "empty value")
	}
	start := 0
	if v[0] == '-' {
		start = 1
	}
	if start == len(v) {
		return fail(-1, "no digits after '-'")
	}
	for j := start; j < len(v); j++ {
		switch c := v[j]; {
		case c >= '0' && c <= '9':
		case j == 0 && c == '+':
			return fail(j, "'+' sign is not accepted")
		case c == 0:
			return fail(j, "NUL byte")
		default:
			return fail(j, fmt.Sprintf("unexpected byte %s", quoteByte(c)))
		}
	}
	// ASCII digits only: ParseUint fails only when the value exceeds 2^64-1.
	n, err := strconv.ParseUint(string(v[start:]), 10, 64)
	neg := start == 1
	switch {
	case err != nil || n > 1<<63 || (!neg && n > math.MaxInt64):
		return fail(-1, "value does not fit in int64")
	case neg && n != 0:
		return fail(-1, "negative value")
	}
	return int64(n), nil
}

// ParseBudgetOption parses a load-time string option, given as the C string
// passed to ExecuTorch's BackendOptions::set_option, the way the TensorRT
// delegate ends up reading it: the value ends at its first NUL and ExecuTorch
// keeps no more than its first MaxOptionStringLen (255) bytes, then
// ParseBudget applies to what is kept. So a 256-digit value is read as its
// first 255 digits, and anything after byte 255 is never seen. An empty
// result gives ErrEmptyBudgetOption, which the delegate logs and ignores.
func ParseBudgetOption(s string) (int64, error) {
	s = cString(s)
	if len(s) > MaxOptionStringLen {
		s = s[:MaxOptionStringLen]
	}
	if s == "" {
		return 0, ErrEmptyBudgetOption
	}
	return ParseBudget([]byte(s))
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

// Budget is a per-engine weight streaming budget, the one form ptekit
// carries it in from a flag or a manifest to the compile spec bytes and
// back to what the views show. The zero Budget is automatic: no
// weight_streaming_budget key, TensorRT chooses. Otherwise it is an
// explicit byte count in [0, 2^63).
type Budget struct {
	bytes    int64
	explicit bool
}

// AutoBudget is the automatic budget (the zero Budget).
var AutoBudget = Budget{}

// BudgetOf returns the explicit budget of n bytes; a negative n is refused.
func BudgetOf(n int64) (Budget, error) {
	if n < 0 {
		return Budget{}, fmt.Errorf("compilespec: weight_streaming_budget must be in [0, 2^63), got %d", n)
	}
	return Budget{bytes: n, explicit: true}, nil
}

// ParseBudgetSize reads a budget as people give it on a command line or in
// a manifest: a byte count or size ("4GiB", "8589934592"; see ParseSize)
// or "auto" (AutoBudget). Errors are *SizeError.
func ParseBudgetSize(s string) (Budget, error) {
	n, auto, err := size.Parse(s)
	if err != nil || auto {
		return Budget{}, err
	}
	return Budget{bytes: n, explicit: true}, nil
}

// ParseBudgetSpec reads a weight_streaming_budget compile spec value
// exactly as the TensorRT delegate does (see ParseBudget); the result is
// always explicit. Errors are *BudgetError.
func ParseBudgetSpec(v []byte) (Budget, error) {
	n, err := ParseBudget(v)
	if err != nil {
		return Budget{}, err
	}
	return Budget{bytes: n, explicit: true}, nil
}

// SpecBudget returns the budget of a delegate's compile spec list as the
// TensorRT delegate reads it: AutoBudget when no spec has the key (compared
// as by Find); a *DuplicateKeyError when it occurs more than once (the
// delegate refuses that) or a *BudgetError when the value is malformed.
func SpecBudget(specs []*pte.CompileSpec) (Budget, error) {
	v, ok, err := Get(specs, KeyWeightStreamingBudget)
	if !ok || err != nil {
		return Budget{}, err
	}
	return ParseBudgetSpec(v)
}

// IsAuto reports whether b is the automatic budget.
func (b Budget) IsAuto() bool { return !b.explicit }

// Bytes returns the explicit budget in bytes; ok is false for AutoBudget.
func (b Budget) Bytes() (n int64, ok bool) { return b.bytes, b.explicit }

// Ptr returns the explicit budget as a pointer to a copy, nil for
// AutoBudget: the form of the JSON documents (null when automatic).
func (b Budget) Ptr() *int64 {
	if !b.explicit {
		return nil
	}
	return new(b.bytes)
}

// Spec returns the compile spec value of b, the ASCII decimal byte count
// without sign or leading zeros that the Torch-TensorRT exporter writes;
// nil for AutoBudget, which writes no key.
func (b Budget) Spec() []byte {
	if !b.explicit {
		return nil
	}
	return strconv.AppendInt(nil, b.bytes, 10)
}

// String returns b as people give it and ParseBudgetSize reads it back:
// "auto", or FormatSize's exact form ("4 GiB").
func (b Budget) String() string {
	if !b.explicit {
		return "auto"
	}
	return size.Format(b.bytes)
}

// Describe returns an explicit b with its exact byte count first
// (DescribeSize: "1073741824 bytes (1 GiB)"), "automatic" for AutoBudget.
func (b Budget) Describe() string {
	if !b.explicit {
		return "automatic"
	}
	return size.Describe(b.bytes)
}

// Total returns what engines engines each holding b may keep resident
// together, as the budget applies to each engine separately: ok is false
// for AutoBudget and when the product does not fit in int64.
func (b Budget) Total(engines int) (total int64, ok bool) {
	if !b.explicit || engines < 0 {
		return 0, false
	}
	if engines == 0 || b.bytes == 0 {
		return 0, true
	}
	total = b.bytes * int64(engines)
	return total, total/int64(engines) == b.bytes
}
