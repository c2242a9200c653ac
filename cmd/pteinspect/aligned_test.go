package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
)

// tabwriterTable is what table replaces: text/tabwriter with padding 2.
func tabwriterTable(indent string, rows [][]string) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, indent+strings.Join(r, "\t"))
	}
	tw.Flush()
	return b.String()
}

// randomRows makes up to 6 rows of cells from an alphabet with empty
// cells, wide runes, tabs, newlines and the bytes tabwriter treats
// specially; uniform gives every row the same number of cells. A row of
// no cells is an indented blank line.
func randomRows(r *rand.Rand, uniform bool) [][]string {
	alphabet := []string{"a", "bb", "é", "漢字", "\\x00", " ", "9", "", "\t", "\n", "\v", "\f", "\xff"}
	if uniform {
		alphabet = alphabet[:8] // printAligned's rows have no separators
	}
	rows := make([][]string, r.IntN(7))
	cols := r.IntN(6)
	for i := range rows {
		n := cols
		if !uniform {
			n = r.IntN(6)
		}
		rows[i] = make([]string, n)
		for j := range rows[i] {
			var b strings.Builder
			for range r.IntN(4) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			rows[i][j] = b.String()
		}
	}
	return rows
}

// TestTableIsTabwriter holds table to the tabwriter layout it replaces,
// byte for byte, on random rows of any shape; and printAligned, which
// streams rows of one shape, to the same. A table is used again after
// each flush, as a view's table is.
func TestTableIsTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var got bytes.Buffer
	tables := []*table{newTable(&got, ""), newTable(&got, "  ")}
	for trial := range 3000 {
		uniform := trial%2 == 0
		rows := randomRows(r, uniform)
		indent := []string{"", "  "}[trial%3%2]
		want := tabwriterTable(indent, rows)
		got.Reset()
		tb := tables[trial%3%2]
		for _, c := range rows {
			tb.row(c...)
		}
		tb.flush()
		if got.String() != want {
			t.Fatalf("table of %q:\n%q\ntabwriter:\n%q", rows, got.String(), want)
		}
		if uniform {
			got.Reset()
			printAligned(&got, indent, len(rows), func(i int) []string { return rows[i] })
			if got.String() != want {
				t.Fatalf("printAligned of %q:\n%q\ntabwriter:\n%q", rows, got.String(), want)
			}
		}
	}
}
