package compilespec

import (
	"errors"
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"math"
	"strconv"
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

// FormatBudget returns the canonical encoding of a weight streaming budget:
// ASCII decimal without sign or leading zeros, as the Torch-TensorRT exporter
// writes it. Negative budgets are refused; every int64 >= 0 is below 2^63.
func FormatBudget(n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("compilespec: weight_streaming_budget must be in [0, 2^63), got %d", n)
	}
	return strconv.AppendInt(nil, n, 10), nil
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
	i := 0
	neg := false
	if v[0] == '-' {
		neg = true
		i = 1
	}
	if i == len(v) {
		return fail(-1, "no digits after '-'")
	}
	var n uint64
	overflow := false
	for j := i; j < len(v); j++ {
		c := v[j]
		if c < '0' || c > '9' {
			switch {
			case j == 0 && c == '+':
				return fail(j, "'+' sign is not accepted")
			case c == 0:
				return fail(j, "NUL byte")
			default:
				return fail(j, fmt.Sprintf("unexpected byte %s", quoteByte(c)))
			}
		}
		if !overflow {
			// n stays <= 2^63 (the magnitude of the most negative int64),
			// so n*10+9 cannot wrap.
			if n > (1<<63)/10 {
				overflow = true
				continue
			}
			n = n*10 + uint64(c-'0')
			if n > 1<<63 {
				overflow = true
			}
		}
	}
	switch {
	case overflow || (!neg && n > math.MaxInt64):
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
