package httprange

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRedact checks that whatever Redact returns for a URL, including ones
// a server sends back in a redirect, parses again without user
// information, query or fragment: the parts that carry credentials never
// reach a message. The password and query of the input, when they are long
// enough to be told apart and not spelt elsewhere in it, do not appear in
// the result.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"https://u:p@host:8443/a/b.pte?X-Amz-Signature=s#f", "http://host/x.pte?", "http://%zz/?t=s",
		"not a url\x7f?t=s", "HTTPS://user:secret@h/p%3Fq?sig=abcdef", "http://h//x?a#b", "https://[::1]:80/x?q", "http:opaque?secret=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := Redact(s)
		u, err := url.Parse(r)
		if err != nil {
			if strings.HasSuffix(r, "<unparsable URL>") {
				return
			}
			t.Fatalf("Redact(%q) = %q, which does not parse: %v", s, r, err)
		}
		if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			t.Fatalf("Redact(%q) = %q keeps user, query or fragment", s, r)
		}
		in, err := url.Parse(s)
		if err != nil {
			return
		}
		// A secret counts as shown only when the input without it does not
		// spell it too. Both sides are compared unescaped and in lower case
		// (the scheme is printed lower-case, and escapes such as "%20"
		// could spell digits that are not there).
		unesc := func(x string) string {
			if v, err := url.PathUnescape(x); err == nil {
				x = v
			}
			return strings.ToLower(x)
		}
		shown := func(secret string) bool {
			sec := unesc(secret)
			return len(sec) >= 8 && !strings.Contains(unesc(strings.Replace(s, secret, "", 1)), sec) && strings.Contains(unesc(r), sec)
		}
		if p, ok := in.User.Password(); ok && shown(p) {
			t.Fatalf("Redact(%q) = %q shows the password", s, r)
		}
		if shown(in.RawQuery) {
			t.Fatalf("Redact(%q) = %q shows the query", s, r)
		}
	})
}
