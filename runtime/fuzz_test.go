package runtime

import (
	"strings"
	"testing"
)

func FuzzParseBackendOption(f *testing.F) {
	for _, s := range []string{"TensorRTBackend:weight_streaming_budget=2048", "T:k=int:-1", "T:k=bool:true",
		`T:k="x"`, "T:k=string:", "T:k=" + strings.Repeat("9", 300), ":k=1", "T:=", "T:k=\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, o, err := ParseBackendOption(s)
		if err != nil {
			if CodeOf(err) != CodeInvalidArgument {
				t.Fatalf("ParseBackendOption(%q): error %v has code %v", s, err, CodeOf(err))
			}
			return
		}
		if err := CheckOption(o); err != nil {
			t.Fatalf("ParseBackendOption(%q) returned an invalid option: %v", s, err)
		}
		if id == "" || !strings.HasPrefix(s, id+":"+o.Key+"=") {
			t.Fatalf("ParseBackendOption(%q) = %q, %q", s, id, o.Key)
		}
		var lo LoadOptions
		if err := lo.Add(id, o); err != nil && len(id) <= MaxBackendIDLen {
			t.Fatalf("Add refused a parsed option: %v", err)
		}
	})
}
