package httprange

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	h, err := ParseHeader("authorization: Bearer abc", "X-Api-Key:  k1 ", "x-api-key: k2")
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Authorization": {"Bearer abc"}, "X-Api-Key": {"k1", "k2"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %v, want %v", h, want)
	}
	for _, bad := range []string{"no colon s3cr3t", ": s3cr3t", "Bad Name: s3cr3t", "X: a\x00s3cr3t"} {
		if _, err := ParseHeader("A: b", bad); err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "header 2") {
			t.Errorf("ParseHeader(%q): %v", bad, err)
		}
	}
}

func TestHeaderFromEnv(t *testing.T) {
	env := map[string]string{
		EnvBearerToken: " tok ",
		EnvHeaders:     "X-One: 1\n\n  X-Two: 2\r\n",
	}
	h, err := HeaderFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Authorization": {"Bearer tok"}, "X-One": {"1"}, "X-Two": {"2"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %v, want %v", h, want)
	}
	env[EnvHeaders] = "Authorization: Basic x"
	if h, _ := HeaderFromEnv(func(k string) string { return env[k] }); h.Get("Authorization") != "Basic x" {
		t.Errorf("%s does not win over the token: %v", EnvHeaders, h)
	}
	env[EnvHeaders] = "oops s3cr3t"
	if _, err := HeaderFromEnv(func(k string) string { return env[k] }); err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), EnvHeaders) {
		t.Errorf("bad %s: %v", EnvHeaders, err)
	}
	if h, err := HeaderFromEnv(func(string) string { return "" }); err != nil || h == nil || len(h) != 0 {
		t.Errorf("empty environment: %v, %v", h, err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@host:8443/a/b.pte?X-Amz-Signature=s#f": "https://host:8443/a/b.pte",
		"http://host/x.pte?": "http://host/x.pte",
		"http://host/x.pte":  "http://host/x.pte",
		"http://%zz/?t=s":    "http://<unparsable URL>",
		"not a url\x7f?t=s":  "<unparsable URL>",
		// url.URL.String prints these so that they read back with an
		// authority (found by FuzzRedact).
		"//@//@": "<unparsable URL>",
		"//@// ": "<unparsable URL>",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsURL(t *testing.T) {
	for in, want := range map[string]bool{
		"http://h/x": true, "HTTPS://h/x": true, "file:///x": false, "x.pte": false, "./http://x": false, "-": false,
	} {
		if IsURL(in) != want {
			t.Errorf("IsURL(%q) = %v", in, !want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	type cr struct {
		first, last, size int64
		ok                bool
	}
	for in, want := range map[string]cr{
		"bytes 0-9/10":                   {0, 9, 10, true},
		"bytes 5-5/*":                    {5, 5, -1, true},
		"bytes */0":                      {-1, -1, 0, true},
		"bytes */*":                      {},
		"bytes 0-10/10":                  {},
		"bytes 9-0/10":                   {},
		"bytes +1-2/10":                  {},
		"bytes 1-2":                      {},
		"bits 1-2/10":                    {},
		"bytes 0-1/99999999999999999999": {},
		"":                               {},
	} {
		a, b, s, ok := parseContentRange(in)
		if got := (cr{a, b, s, ok}); ok != want.ok || ok && got != want {
			t.Errorf("parseContentRange(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestKindString(t *testing.T) {
	seen := map[string]bool{}
	for k := range kindInfo {
		s := k.String()
		if seen[s] || strings.HasPrefix(s, "Kind(") {
			t.Errorf("kind %d: name %q", k, s)
		}
		seen[s] = true
	}
	if Kind(99).String() != "Kind(99)" {
		t.Error(Kind(99).String())
	}
}

// FuzzParseHeader: ParseHeader never panics, keeps what it accepts
// sendable, and never quotes a value in its errors.
func FuzzParseHeader(f *testing.F) {
	f.Add("Authorization: Bearer abc")
	f.Add("X-Key:\tv\r\nInjected: 1")
	f.Add("bad name: zz")
	f.Add("X-Key: S3CR3T\x00")
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ParseHeader(line)
		if err != nil {
			// A marker only in the value must not show.
			if name, value, _ := strings.Cut(line, ":"); strings.Contains(value, "S3CR3T") && !strings.Contains(name, "S3CR3T") && strings.Contains(err.Error(), "S3CR3T") {
				t.Fatalf("error %q quotes the value", err)
			}
			return
		}
		for k, vs := range h {
			if !validHeaderName(k) {
				t.Fatalf("accepted name %q", k)
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("accepted value %q", v)
				}
			}
		}
	})
}
