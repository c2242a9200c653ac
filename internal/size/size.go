// Package size is the one reading and writing of byte counts for people:
// Parse reads the exact forms of command lines and configuration ("8GiB",
// "1.5 GiB", "8GB", "auto"), Format writes them back exactly, FormatApprox
// is the at-a-glance form ("1.5 GiB"), Describe the bytes with either, and
// Add sums sizes without wrapping. It sits at the bottom of the module
// (it imports only internal/quote), so that a progress line need not
// import the program model to print "1.5 GiB"; package compilespec gives
// the same functions to library users (ParseSize, FormatSize, ...).
package size

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/internal/quote"
)

// sizeUnit is a size suffix and its multiplier.
type sizeUnit struct {
	name string
	mult int64
}

// sizeUnits lists every suffix Parse accepts, largest first within each
// family; Format picks from displayUnits.
var sizeUnits = []sizeUnit{
	{"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"kB", 1e3},
	{"B", 1},
}

// displayUnits is the order in which Format tries units: largest
// multiplier first, so that it picks the shortest exact form.
var displayUnits = []sizeUnit{
	{"PiB", 1 << 50}, {"PB", 1e15}, {"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6},
	{"KiB", 1 << 10}, {"KB", 1e3},
}

// acceptedSizes describes the accepted forms for error messages.
const acceptedSizes = `a whole number of bytes below 2^63, written as digits ("8589934592") or ` +
	`as a number with a unit ("8GiB", "512 MiB", "1.5GiB", "8Gi", "8GB"); units: B, KiB, MiB, GiB, TiB, PiB ` +
	`or Ki, Mi, Gi, Ti, Pi in any case (powers of 1024), KB, MB, GB, TB, PB (powers of 1000); or "auto"`

// Error reports a size that Parse does not accept.
type Error struct {
	Input  string // the text as given
	Reason string // what is wrong with it, in lower case
}

// maxSizeLen is the longest size text Parse reads, spaces around it
// aside; it is also how much of the input an error message quotes. The
// longest useful form, 2^63-1 written with a fraction and a unit, is far
// shorter.
const maxSizeLen = 64

// Error implements error. An input longer than 64 bytes is quoted only in
// part, with its length.
func (e *Error) Error() string {
	return fmt.Sprintf("invalid size %s: %s; accepted: %s", quote.String(e.Input), e.Reason, acceptedSizes)
}

// Parse reads a byte count written for humans, as on a command line or
// in a configuration file. It accepts a plain decimal byte count
// ("8589934592", "0"), a decimal number followed by a unit, optionally
// separated by spaces ("8GiB", "512 MiB", "1.5GiB", "8GB"), and the word
// "auto" (any case), which returns auto == true and means "no budget key:
// let the engine choose".
//
// Units: binary units are powers of 1024 and are accepted in any case and
// in the Kubernetes short form ("8GiB", "8gib", "8GIB", "8Gi", "512Mi":
// KiB/Ki, MiB/Mi, GiB/Gi, TiB/Ti, PiB/Pi); decimal units are powers of 1000
// and exact (KB or kB, MB, GB, TB, PB); B is one byte. Forms that people
// use for either ("8G", "8g", "8gb", "8Gb" — gigabits —, "8b") are refused
// with a hint naming both readings ("did you mean 8GiB or 8GB?").
//
// A fraction must come to a whole number of bytes ("1.5GiB" is fine, "1.5B"
// and "0.1KiB" are not). Negative values, values of 2^63 bytes or more,
// signs, exponents, unknown units and text longer than 64 characters (after
// trimming spaces) are errors (*Error) that list what is accepted.
func Parse(s string) (bytes int64, auto bool, err error) {
	fail := func(reason string) (int64, bool, error) {
		return 0, false, &Error{Input: s, Reason: reason}
	}
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "auto") {
		return 0, true, nil
	}
	if t == "" {
		return fail("empty")
	}
	if len(t) > maxSizeLen {
		return fail(fmt.Sprintf("longer than %d characters", maxSizeLen))
	}
	switch t[0] {
	case '-':
		return fail("negative sizes are not allowed")
	case '+':
		return fail("a sign is not allowed")
	}
	// Split into the number (digits with at most one '.') and the unit.
	end := 0
	for end < len(t) && (isDigit(t[end]) || t[end] == '.' && !strings.Contains(t[:end], ".")) {
		end++
	}
	num, unitName := t[:end], strings.TrimLeft(t[end:], " \t")
	intPart, fracPart, hasDot := strings.Cut(num, ".")
	switch {
	case num == "":
		return fail("no number")
	case hasDot && (intPart == "" || fracPart == ""):
		return fail("a decimal point needs digits on both sides")
	}
	mult := int64(1)
	if unitName != "" {
		u, ok := lookupUnit(unitName)
		if !ok {
			return fail(unitHint(num, unitName))
		}
		mult = u.mult
	}
	// value = (intPart.fracPart) * mult, computed exactly.
	digits, ok := new(big.Int).SetString(intPart+fracPart, 10)
	if !ok { // unreachable: only ASCII digits remain
		return fail("no number")
	}
	val := new(big.Int).Mul(digits, big.NewInt(mult))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fracPart))), nil)
	q, r := new(big.Int).QuoRem(val, scale, new(big.Int))
	if r.Sign() != 0 {
		return fail("not a whole number of bytes")
	}
	if !q.IsInt64() {
		return fail("too large (2^63 bytes or more)")
	}
	return q.Int64(), false, nil
}

// lookupUnit finds a unit: an exact name from sizeUnits, a binary unit in
// any case ("gib", "GIB"), or a Kubernetes binary suffix in any case ("Gi").
// Decimal units stay case-sensitive: "Gb" is gigabits, "gb" could be either.
func lookupUnit(name string) (sizeUnit, bool) {
	for _, u := range sizeUnits {
		if u.name == name {
			return u, true
		}
	}
	for _, u := range sizeUnits {
		if strings.HasSuffix(u.name, "iB") && (strings.EqualFold(name, u.name) || strings.EqualFold(name, u.name[:2])) {
			return u, true
		}
	}
	return sizeUnit{}, false
}

// unitHint explains a unit Parse refuses, with the forms the user
// probably meant: "G", "g", "gb" and "Gb" could mean GiB or GB (docker
// reads "8g" as GiB, disk vendors "8GB" as 10^9), and "b" could be bits.
func unitHint(num, unit string) string {
	u := strings.ToUpper(unit)
	if len(u) == 2 && u[1] == 'B' {
		u = u[:1]
	}
	if len(u) == 1 && strings.Contains("KMGTP", u) {
		return fmt.Sprintf("ambiguous unit %s: did you mean %s%siB or %s%sB?", quote.String(unit), num, u, num, u)
	}
	if unit == "b" {
		return fmt.Sprintf("ambiguous unit %s (bits?): did you mean %sB?", quote.String(unit), num)
	}
	return fmt.Sprintf("unknown unit %s", quote.String(unit))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Format returns n in a short human form that Parse reads back as
// exactly n: the largest unit (binary or decimal) in which n is a whole
// number, or a number below 1000 with at most three decimals, e.g. "8 GiB",
// "1.5 GiB", "1 GB", "1025 MiB"; or plain bytes ("123 B", "1234567 B") when no
// unit gives an exact short form. Negative values are shown
// as "-" followed by the form of their magnitude (Parse refuses them).
func Format(n int64) string {
	if n < 0 {
		if n == math.MinInt64 {
			return "-9223372036854775808 B"
		}
		return "-" + Format(-n)
	}
	for _, u := range displayUnits {
		if n < u.mult {
			continue
		}
		whole, rem := n/u.mult, n%u.mult
		if rem == 0 {
			return fmt.Sprintf("%d %s", whole, u.name)
		}
		// A fraction only for a short whole part ("1.5 GiB", not
		// "1234.567 KB"). rem*1000 does not overflow: rem < 2^50.
		if whole >= 1000 || rem*1000%u.mult != 0 {
			continue
		}
		frac := strings.TrimRight(fmt.Sprintf("%03d", rem*1000/u.mult), "0")
		return fmt.Sprintf("%d.%s %s", whole, frac, u.name)
	}
	return fmt.Sprintf("%d B", n)
}

// Add returns the sum of byte counts, saturating at math.MaxInt64 (and
// math.MinInt64) instead of wrapping: sizes come from files and flags, and a
// total must never turn negative because a hostile value was huge. A
// saturated total reads as FormatApprox's "8 EiB".
func Add(sizes ...int64) int64 {
	var sum int64
	for _, n := range sizes {
		switch {
		case n > 0 && sum > math.MaxInt64-n:
			sum = math.MaxInt64
		case n < 0 && sum < math.MinInt64-n:
			sum = math.MinInt64
		default:
			sum += n
		}
	}
	return sum
}

// FormatApprox returns n for people to read at a glance: plain bytes
// below 1 KiB ("512 B"), else one decimal in the largest binary unit it
// reaches ("1.5 KiB", "3.0 GiB", "8.0 EiB" for math.MaxInt64). It is not
// exact; Format is, and Parse reads Format's forms back.
func FormatApprox[T ~int64 | ~uint64 | ~int | ~uint32](n T) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(int64(n), 10) + " B"
	}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	// strconv, not fmt: views print this for every delegate.
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}

// Describe is how views show a byte count people may need exactly:
// the bytes, then Format's short exact form when there is one
// ("1073741824 bytes (1 GiB)"), else FormatApprox's
// ("9223372036854775807 bytes (about 8.0 EiB)").
func Describe(n int64) string {
	exact := Format(n)
	if n >= 1024 && exact == fmt.Sprintf("%d B", n) {
		return fmt.Sprintf("%d bytes (about %s)", n, FormatApprox(n))
	}
	return fmt.Sprintf("%d bytes (%s)", n, exact)
}
