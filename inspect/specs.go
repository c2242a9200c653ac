package inspect

import (
	"encoding/hex"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// CompileSpecTable is what `pteinspect --compile-specs --json` prints.
type CompileSpecTable struct {
	CompileSpecs []CompileSpecRow `json:"compile_specs"`
}

// CompileSpecRow is one compile spec of one delegate, as the
// --compile-specs table shows it.
type CompileSpecRow struct {
	Method        string `json:"method"`
	DelegateIndex int    `json:"delegate_index"`
	Backend       string `json:"backend"`
	Key           string `json:"key"`
	ValueHex      string `json:"value_hex"`
	// ValueUTF8 is the value as text, nil when it is not valid UTF-8.
	ValueUTF8 *string `json:"value_utf8"`
	// Decoded is the value as a person reads it (DecodeSpec).
	Decoded string `json:"decoded"`
}

// CompileSpecRows yields the compile specs of p's delegates in file order,
// only those of the method named method and of backend id backend when
// they are not empty, reading only the delegates of one method at a time
// (pte.Program.PlanDelegates).
func CompileSpecRows(p *pte.Program, method, backend string) iter.Seq[CompileSpecRow] {
	return func(yield func(CompileSpecRow) bool) {
		for i := range p.NumPlans() {
			name := p.PlanName(i)
			if method != "" && name != method {
				continue // not decoded
			}
			for di, d := range p.PlanDelegates(i) {
				if !SelectsDelegate(d, backend) {
					continue
				}
				for _, cs := range d.CompileSpecs {
					if cs == nil {
						continue
					}
					r := CompileSpecRow{Method: name, DelegateIndex: di, Backend: d.ID, Key: cs.Key, Decoded: DecodeSpec(cs.Key, cs.Value)}
					r.ValueHex, r.ValueUTF8 = hexAndText(cs.Value)
					if !yield(r) {
						return
					}
				}
			}
		}
	}
}

// DecodeSpec returns a compile spec value as a person wants to read it:
// decoded for the keys the TensorRT delegate knows, SpecValueText otherwise.
func DecodeSpec(key string, value []byte) string {
	switch key {
	case compilespec.KeyWeightStreamingBudget:
		b, err := compilespec.ParseBudgetSpec(value)
		if err != nil {
			return fmt.Sprintf("%s: INVALID, the delegate refuses to load (%v)", SpecValueText(value), err)
		}
		return b.Describe()
	case compilespec.KeyTargetDevice:
		typ, idx, err := compilespec.ParseTargetDevice(value)
		if err != nil {
			return fmt.Sprintf("%s: invalid (%v)", SpecValueText(value), err)
		}
		return fmt.Sprintf("%s (%s device %d)", SpecValueText(value), typ, idx)
	}
	return SpecValueText(value)
}

// SpecValueText shows bytes as text when they are printable UTF-8, quoted
// when they need it, and as hex otherwise ("hex:...", shortened past 32
// bytes).
func SpecValueText(v []byte) string {
	s := string(v)
	switch {
	case utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' && r != '\t' }):
		if s != "" && !strings.ContainsAny(s, " \"\t") {
			return s
		}
		return strconv.Quote(s)
	case len(v) > 32:
		return fmt.Sprintf("hex:%s... (%d bytes)", hex.EncodeToString(v[:32]), len(v))
	}
	return "hex:" + hex.EncodeToString(v)
}

// hexAndText returns v as lowercase hex and as text (nil when it is not
// valid UTF-8): the value_hex and value_utf8 members.
func hexAndText(v []byte) (hexText string, text *string) {
	if s := string(v); utf8.ValidString(s) {
		text = &s
	}
	return hex.EncodeToString(v), text
}
