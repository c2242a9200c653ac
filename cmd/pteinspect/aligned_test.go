package main

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPrintAlignedIsTable holds printAligned to the table it streams in
// place of: the same bytes for tables of random cells (empty ones, wide
// runes, escapes) and row counts.
func TestPrintAlignedIsTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "bb", "é", "漢字", "\\x00", " ", "9", ""}
	for trial := range 200 {
		rows, cols := r.IntN(6), 1+r.IntN(5)
		cells := make([][]string, rows)
		for i := range cells {
			cells[i] = make([]string, cols)
			for j := range cells[i] {
				var b strings.Builder
				for range r.IntN(4) {
					b.WriteString(alphabet[r.IntN(len(alphabet))])
				}
				cells[i][j] = b.String()
			}
		}
		indent := []string{"", "  "}[trial%2]
		var want, got bytes.Buffer
		tb := newTable(&want, indent)
		for _, c := range cells {
			tb.row(c...)
		}
		tb.flush()
		printAligned(&got, indent, rows, func(i int) []string { return cells[i] })
		if got.String() != want.String() {
			t.Fatalf("cells %q:\nprintAligned:\n%s\ntable:\n%s", cells, got.String(), want.String())
		}
	}
}
