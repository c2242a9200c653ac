package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/pte"
)

// decodeSpec returns a compile spec value as a person wants to read it:
// decoded for the keys the TensorRT delegate knows, text or hex otherwise.
func decodeSpec(key string, value []byte) string {
	switch key {
	case compilespec.KeyWeightStreamingBudget:
		n, err := compilespec.ParseBudget(value)
		if err != nil {
			return fmt.Sprintf("%s: INVALID, the delegate refuses to load (%v)", rawValue(value), err)
		}
		return fmt.Sprintf("%d bytes (%s)", n, compilespec.FormatSize(n))
	case compilespec.KeyTargetDevice:
		typ, idx, err := compilespec.ParseTargetDevice(value)
		if err != nil {
			return fmt.Sprintf("%s: invalid (%v)", rawValue(value), err)
		}
		return fmt.Sprintf("%s (%s device %d)", rawValue(value), typ, idx)
	}
	return rawValue(value)
}

// rawValue shows bytes as text when they are printable UTF-8, quoted when
// they need it, and as hex otherwise (shortened past 32 bytes).
func rawValue(v []byte) string {
	if utf8.Valid(v) {
		plain := len(v) > 0
		for _, r := range string(v) {
			if !unicode.IsPrint(r) || r == ' ' || r == '"' {
				plain = false
			}
			if !unicode.IsPrint(r) && r != ' ' && r != '\t' {
				return hexValue(v)
			}
		}
		if plain {
			return string(v)
		}
		return strconv.Quote(string(v))
	}
	return hexValue(v)
}

func hexValue(v []byte) string {
	const max = 32
	if len(v) <= max {
		return "hex:" + hex.EncodeToString(v)
	}
	return fmt.Sprintf("hex:%s... (%d bytes)", hex.EncodeToString(v[:max]), len(v))
}

// specRow is one line of the --compile-specs table.
type specRow struct {
	Method        string  `json:"method"`
	DelegateIndex int     `json:"delegate_index"`
	Backend       string  `json:"backend"`
	Key           string  `json:"key"`
	ValueHex      string  `json:"value_hex"`
	ValueUTF8     *string `json:"value_utf8"`
	Decoded       string  `json:"decoded"`
}

// runCompileSpecs prints the compile spec table: method, delegate index,
// backend, key and decoded value.
func runCompileSpecs(f *pte.File, name string, w io.Writer, stderr io.Writer, o *options) int {
	rows := []specRow{}
	for _, ep := range f.Program.ExecutionPlan {
		if ep == nil || (o.method != "" && ep.Name != o.method) {
			continue
		}
		for di, d := range ep.Delegates {
			if d == nil || (o.backend != "" && d.ID != o.backend) {
				continue
			}
			for _, cs := range d.CompileSpecs {
				if cs == nil {
					continue
				}
				r := specRow{Method: ep.Name, DelegateIndex: di, Backend: d.ID, Key: cs.Key,
					ValueHex: hex.EncodeToString(cs.Value), Decoded: decodeSpec(cs.Key, cs.Value)}
				if utf8.Valid(cs.Value) {
					s := string(cs.Value)
					r.ValueUTF8 = &s
				}
				rows = append(rows, r)
			}
		}
	}
	if o.json {
		if err := inspect.Encode(w, struct {
			CompileSpecs []specRow `json:"compile_specs"`
		}{rows}); err != nil {
			return failErr(stderr, name, err)
		}
		return exitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no compile specs")
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tDELEGATE\tBACKEND\tKEY\tVALUE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", esc(r.Method), r.DelegateIndex, esc(r.Backend), esc(r.Key), escText(r.Decoded))
	}
	tw.Flush()
	return exitOK
}

func hasMethod(p *pte.Program, name string) bool {
	for _, ep := range p.ExecutionPlan {
		if ep != nil && ep.Name == name {
			return true
		}
	}
	return false
}

func noMethod(p *pte.Program, name string) error {
	return fmt.Errorf("%w %q (methods: %s)", inspect.ErrNoMethod, name, joinOr(escAll(methodNames(p))))
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += ", " + x
	}
	return out
}

// methodNames returns the names of p's methods in order.
func methodNames(p *pte.Program) []string {
	var names []string
	for _, ep := range p.ExecutionPlan {
		if ep != nil {
			names = append(names, ep.Name)
		}
	}
	return names
}

// backendIDs returns the distinct backend ids of p's delegates in order of
// first use, only those of the named method when method is not empty.
func backendIDs(p *pte.Program, method string) []string {
	var ids []string
	for _, ep := range p.ExecutionPlan {
		if ep == nil || (method != "" && ep.Name != method) {
			continue
		}
		for _, d := range ep.Delegates {
			if d != nil && !slices.Contains(ids, d.ID) {
				ids = append(ids, d.ID)
			}
		}
	}
	return ids
}
