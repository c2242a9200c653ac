package compilespec

import (
	"bufio"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// TestParseBudgetVectors checks every row of the upstream budget vectors:
// each verdict was produced by the real C++ parse_weight_streaming_budget.
func TestParseBudgetVectors(t *testing.T) {
	f, err := os.Open(testkit.SharedDir(t, "vectors", "budget", "cases.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	rows, valid := 0, 0
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			if sc.Text() != "name\tinput_hex\tvalid\tbytes" {
				t.Fatalf("unexpected header %q", sc.Text())
			}
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 4 {
			t.Fatalf("line %d: %d columns", line+1, len(cols))
		}
		name := cols[0]
		in, err := hex.DecodeString(cols[1])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantValid := cols[2] == "true"
		wantBytes, err := strconv.ParseInt(cols[3], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows++
		got, err := ParseBudget(in)
		if wantValid {
			valid++
			if err != nil || got != wantBytes {
				t.Errorf("%s: ParseBudget(%q) = %d, %v; want %d", name, in, got, err, wantBytes)
			}
		} else {
			var be *BudgetError
			if !errors.As(err, &be) {
				t.Errorf("%s: ParseBudget(%q) = %d, %v; want *BudgetError", name, in, got, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("cases.tsv has no cases")
	}
	t.Logf("%d cases, %d valid", rows, valid)
}

func TestParseBudgetCases(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		errSub string // "" means valid
	}{
		{"0", 0, ""},
		{"-0", 0, ""},
		{"-000", 0, ""},
		{"0000000001", 1, ""},
		{"9223372036854775807", math.MaxInt64, ""},
		{"9223372036854775808", 0, "does not fit"},
		{"-9223372036854775808", 0, "negative"},
		{"-9223372036854775809", 0, "does not fit"},
		{"99999999999999999999999999", 0, "does not fit"},
		{"-1", 0, "negative"},
		{"", 0, "empty"},
		{"-", 0, "no digits"},
		{"+1", 0, "'+'"},
		{"1+", 0, "unexpected byte '+' at byte 1"},
		{"12\x00", 0, "NUL byte at byte 2"},
		{" 1", 0, "at byte 0"},
		{"1 ", 0, "at byte 1"},
		{"12x", 0, "'x' at byte 2"},
		{"--1", 0, "at byte 1"},
		{"1\xff", 0, "0xff at byte 1"},
		{"99999999999999999999x", 0, "'x' at byte 20"}, // the C++ parser also stops at the bad byte
	}
	for _, tc := range tests {
		got, err := ParseBudget([]byte(tc.in))
		if tc.errSub == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseBudget(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.errSub) {
			t.Errorf("ParseBudget(%q) error = %v; want one containing %q", tc.in, err, tc.errSub)
		}
	}
}

func TestParseBudgetOption(t *testing.T) {
	// ExecuTorch keeps at most 255 bytes of a string option (char[256] with
	// its NUL), so the 256th byte and later are never seen.
	kept := strings.Repeat("0", 254) + "7" // 255 bytes: all kept
	zeros := strings.Repeat("0", 255)
	tests := []struct {
		in    string
		want  int64
		err   error // sentinel to match with errors.Is; nil when valid or *BudgetError
		valid bool
	}{
		{"2048", 2048, nil, true},
		{"128\x00999", 128, nil, true}, // the C string ends at the NUL
		{"", 0, ErrEmptyBudgetOption, false},
		{"\x00123", 0, ErrEmptyBudgetOption, false},
		{kept, 7, nil, true},
		{kept + "x", 7, nil, true},  // the 256th byte is cut off
		{zeros + "5", 0, nil, true}, // so is a 256th digit
		{zeros + "x", 0, nil, true},
		{strings.Repeat("1", 254) + "x", 0, nil, false}, // the 255th byte is kept
		{"7\x00" + zeros + "x", 7, nil, true},
		{"-1", 0, nil, false},
		{" 1", 0, nil, false},
	}
	for _, tc := range tests {
		got, err := ParseBudgetOption(tc.in)
		switch {
		case tc.valid:
			if err != nil || got != tc.want {
				t.Errorf("ParseBudgetOption(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		case tc.err != nil:
			if !errors.Is(err, tc.err) {
				t.Errorf("ParseBudgetOption(%q) error = %v; want %v", tc.in, err, tc.err)
			}
		default:
			var be *BudgetError
			if !errors.As(err, &be) {
				t.Errorf("ParseBudgetOption(%q) error = %v; want *BudgetError", tc.in, err)
			}
		}
	}
}

func TestBudgetSpec(t *testing.T) {
	for _, n := range []int64{0, 1, 4096, 8589934592, math.MaxInt64} {
		b, err := BudgetOf(n)
		if err != nil {
			t.Fatalf("BudgetOf(%d): %v", n, err)
		}
		if string(b.Spec()) != strconv.FormatInt(n, 10) {
			t.Errorf("BudgetOf(%d).Spec() = %q", n, b.Spec())
		}
		back, err := ParseBudgetSpec(b.Spec())
		if err != nil || back != b {
			t.Errorf("ParseBudgetSpec(BudgetOf(%d).Spec()) = %v, %v", n, back, err)
		}
		if again, err := ParseBudgetSize(b.String()); err != nil || again != b {
			t.Errorf("ParseBudgetSize(%q) = %v, %v; want %v back", b.String(), again, err, b)
		}
		if got, ok := b.Bytes(); !ok || got != n || *b.Ptr() != n || b.IsAuto() {
			t.Errorf("BudgetOf(%d): Bytes %d, %v; Ptr %d; IsAuto %v", n, got, ok, *b.Ptr(), b.IsAuto())
		}
	}
	for _, n := range []int64{-1, math.MinInt64} {
		if b, err := BudgetOf(n); err == nil {
			t.Errorf("BudgetOf(%d) = %v, want error", n, b)
		}
	}
	auto, err := ParseBudgetSize("auto")
	if err != nil || auto != AutoBudget || !auto.IsAuto() || auto.Spec() != nil || auto.Ptr() != nil || auto.String() != "auto" {
		t.Errorf("ParseBudgetSize(\"auto\") = %#v, %v; Spec %q, String %q", auto, err, auto.Spec(), auto.String())
	}
	if _, err := ParseBudgetSize("8G"); err == nil {
		t.Error("ParseBudgetSize(\"8G\") accepted an ambiguous unit")
	}
}

func TestBudgetTotal(t *testing.T) {
	gib, _ := BudgetOf(1 << 30)
	zero, _ := BudgetOf(0)
	huge, _ := BudgetOf(math.MaxInt64 / 2)
	for _, tc := range []struct {
		b       Budget
		engines int
		want    int64
		ok      bool
	}{
		{gib, 3, 3 << 30, true},
		{zero, 5, 0, true},
		{gib, 0, 0, true},
		{huge, 3, 0, false},
		{AutoBudget, 2, 0, false},
	} {
		got, ok := tc.b.Total(tc.engines)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%v.Total(%d) = %d, %v; want %d, %v", tc.b, tc.engines, got, ok, tc.want, tc.ok)
		}
	}
}

// refParseBudget is an independent statement of the C++ rules on top of
// strconv.ParseInt, used to cross-check ParseBudget in FuzzParseBudget.
func refParseBudget(v []byte) (int64, bool) {
	s := string(v)
	if s == "" || s[0] == '+' {
		return 0, false // ParseInt accepts '+', from_chars does not
	}
	n, err := strconv.ParseInt(s, 10, 64) // rejects spaces, NUL, '_' in base 10, non-ASCII
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"0", "-0", "-00", "+1", "1 ", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "12\x00", "", "-", "0x10", "1_000", "007"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := ParseBudget(v)
		want, ok := refParseBudget(v)
		if ok != (err == nil) || got != want {
			t.Fatalf("ParseBudget(%q) = %d, %v; reference %d, %v", v, got, err, want, ok)
		}
		if err != nil {
			var be *BudgetError
			if !errors.As(err, &be) || be.Off >= len(v) {
				t.Fatalf("ParseBudget(%q): bad error %#v", v, err)
			}
			return
		}
		b, err := BudgetOf(got)
		if err != nil {
			t.Fatal(err)
		}
		canon := b.Spec()
		if again, err := ParseBudget(canon); err != nil || again != got {
			t.Fatalf("round trip of %d via %q: %d, %v", got, canon, again, err)
		}
	})
}
