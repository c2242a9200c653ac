package delegate

import (
	"bytes"
	"strings"
	"testing"
)

// TestHazardAliasedIOInvalid: an aliased_io entry that TensorRTBackend
// init refuses (a name that is no binding of its direction, an unknown
// kind) is a hazard of its own kind, whichever reading accepts the blob,
// and is not a disagreement between the readers.
func TestHazardAliasedIOInvalid(t *testing.T) {
	const io = `{"io_bindings":[{"name":"x","is_input":true},{"name":"y","is_input":false}]`
	eng := []byte("ENG!")
	for _, c := range []struct {
		name string
		blob []byte
		want []string // one hazard mentioning each, in order
	}{
		{"valid kv_cache_update", handBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"x","kind":"kv_cache_update"}]}`, eng, nil), nil},
		{"valid user", handBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"x","kind":"user"}]}`, eng, nil), nil},
		{"unknown kind", handBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"x","kind":"bogus"}]}`, eng, nil),
			[]string{`aliased_io entry "y" <- "x" has kind "bogus"`}},
		{"output is an input", handBlob("TR02", io+`,"aliased_io":[{"output":"x","input":"x","kind":"user"}]}`, eng, nil),
			[]string{`output "x" is not an output binding`}},
		{"input unknown and kind unknown", handBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"z","kind":"odd"}]}`, eng, nil),
			[]string{`input "z" is not an input binding`, `has kind "odd"`}},
		{"both names unknown", handBlob("TR02", io+`,"aliased_io":[{"output":"p","input":"q","kind":"user"}]}`, eng, nil),
			[]string{`output "p" is not an output binding`, `input "q" is not an input binding`}},
		// Without binding names init takes them from the engine: only the
		// kind can be checked.
		{"no bindings", handBlob("TR02", `{"io_bindings":[],"aliased_io":[{"output":"p","input":"q","kind":"bogus"}]}`, eng, nil),
			[]string{`has kind "bogus"`}},
		// The strict reading refuses the trailing text; the deployed reader
		// accepts the blob and init then refuses the alias.
		{"deployed accepts an invalid blob", handBlob("TR02", io+`,"aliased_io":[{"output":"y","input":"z","kind":"user"}]} junk`, eng, nil),
			[]string{`input "z" is not an input binding`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Check(bytes.NewReader(c.blob), int64(len(c.blob)))
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Deployed.OK {
				t.Fatalf("the deployed reader rejects the test blob: %s", rep.Deployed.Reason)
			}
			var got []Hazard
			for _, h := range rep.Hazards {
				if h.Kind == HazardAliasedIOInvalid {
					got = append(got, h)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("want %d %s hazards, got %v", len(c.want), HazardAliasedIOInvalid, rep.Hazards)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i].Msg, w) || !strings.Contains(got[i].Msg, "InvalidProgram") {
					t.Errorf("hazard %d is %q, want it to mention %q and InvalidProgram", i, got[i].Msg, w)
				}
			}
		})
	}
	if HazardAliasedIOInvalid.Disagreement() {
		t.Error("an alias init refuses is a property of the blob, not a disagreement of the readers")
	}
	if got := HazardAliasedIOInvalid.String(); got != "aliased-io-invalid" {
		t.Errorf("String() = %q", got)
	}
	// A blob the deployed reader rejects is not checked further.
	bad := handBlob("TR02", `{"io_bindings":[{"name":"o","is_input":false}],"aliased_io":[{"output":"o","input":"device_id","kind":"bogus"}],"device_id":1}`, eng, nil)
	rep, err := Check(bytes.NewReader(bad), int64(len(bad)))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deployed.OK {
		t.Fatal("want a blob the deployed reader rejects")
	}
	for _, h := range rep.Hazards {
		if h.Kind == HazardAliasedIOInvalid {
			t.Errorf("hazard on a blob the deployed reader rejects: %v", h)
		}
	}
}
