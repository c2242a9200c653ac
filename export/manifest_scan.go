package export

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// scanJSON builds the same jval tree as the json.Decoder-based parser,
// about ten times faster, for a well-formed manifest: one pass over the
// bytes, strings without escapes taken as they are. It gives up (false) on
// anything else, a syntax error, a member given twice or nesting past
// maxManifestDepth, and parseJSON then parses with the decoder, which
// reports the error where it is.
func scanJSON(data []byte) (*jval, bool) {
	s := &jscan{data: data, names: map[string]string{}}
	v, ok := s.value(0)
	if !ok {
		return nil, false
	}
	s.space()
	return v, s.pos == len(s.data)
}

type jscan struct {
	data []byte
	pos  int
	// Members and items of the containers being read, stacked, so that
	// each container gets slices of its exact length (a manifest of many
	// engines has hundreds of thousands of small objects).
	items []*jval
	keys  []string
	koffs []int64
	// vals hands out jvals from blocks, one allocation per block.
	vals []jval
	// names holds each short member name once: the same few names
	// repeat in every object. (Values are not interned: names of methods
	// and tensors are mostly unique, and the map would only grow.)
	names map[string]string
}

// Member names up to maxInterned bytes are interned (jscan.names).
const maxInterned = 16

// newVal returns a zero jval at off.
func (s *jscan) newVal(off int) *jval {
	if len(s.vals) == 0 {
		s.vals = make([]jval, 256)
	}
	v := &s.vals[0]
	s.vals = s.vals[1:]
	v.off = int64(off)
	return v
}

func (s *jscan) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

func (s *jscan) value(depth int) (*jval, bool) {
	s.space()
	if s.pos >= len(s.data) {
		return nil, false
	}
	v := s.newVal(s.pos)
	switch c := s.data[s.pos]; {
	case c == '{' || c == '[':
		if depth >= maxManifestDepth {
			return nil, false
		}
		s.pos++
		if c == '[' {
			v.kind = jArray
			return v, s.array(v, depth)
		}
		v.kind = jObject
		return v, s.object(v, depth)
	case c == '"':
		str, ok := s.str(false)
		v.kind, v.str = jString, str
		return v, ok
	case c == '-' || c >= '0' && c <= '9':
		num, ok := s.number()
		v.kind, v.str = jNumber, num
		return v, ok
	default:
		for _, lit := range []struct {
			text string
			kind jkind
			b    bool
		}{{"true", jBool, true}, {"false", jBool, false}, {"null", jNull, false}} {
			if len(s.data)-s.pos >= len(lit.text) && string(s.data[s.pos:s.pos+len(lit.text)]) == lit.text {
				s.pos += len(lit.text)
				v.kind, v.b = lit.kind, lit.b
				return v, true
			}
		}
		return nil, false
	}
}

// array reads the items and the closing bracket of an array.
func (s *jscan) array(v *jval, depth int) bool {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return true
	}
	mark := len(s.items)
	defer func() { s.items = s.items[:mark] }()
	for {
		item, ok := s.value(depth + 1)
		if !ok {
			return false
		}
		s.items = append(s.items, item)
		if !s.next(']') {
			return false
		}
		if s.data[s.pos-1] == ']' {
			v.items = slices.Clone(s.items[mark:])
			return true
		}
	}
}

// object reads the members and the closing brace of an object.
func (s *jscan) object(v *jval, depth int) bool {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return true
	}
	mark, imark := len(s.keys), len(s.items)
	defer func() {
		s.items, s.keys, s.koffs = s.items[:imark], s.keys[:mark], s.koffs[:mark]
	}()
	for {
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		koff := int64(s.pos)
		key, ok := s.str(true)
		if !ok || slices.Contains(s.keys[mark:], key) {
			return false
		}
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return false
		}
		s.pos++
		item, ok := s.value(depth + 1)
		if !ok {
			return false
		}
		s.keys = append(s.keys, key)
		s.koffs = append(s.koffs, koff)
		s.items = append(s.items, item)
		if !s.next('}') {
			return false
		}
		if s.data[s.pos-1] == '}' {
			v.keys = slices.Clone(s.keys[mark:])
			v.koffs = slices.Clone(s.koffs[mark:])
			v.items = slices.Clone(s.items[imark:])
			return true
		}
	}
}

// next consumes a ',' or the closing delimiter.
func (s *jscan) next(closing byte) bool {
	s.space()
	if s.pos < len(s.data) && (s.data[s.pos] == ',' || s.data[s.pos] == closing) {
		s.pos++
		return true
	}
	return false
}

// str reads a string token; a member name (key) is interned. One with
// escapes or bytes that are not ASCII is decoded by encoding/json, so
// that it reads exactly as the decoder would read it.
func (s *jscan) str(key bool) (string, bool) {
	start := s.pos
	s.pos++
	plain := true
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			raw := s.data[start:s.pos]
			if plain && key {
				return s.intern(raw[1 : len(raw)-1]), true
			}
			if plain {
				return string(raw[1 : len(raw)-1]), true
			}
			if !utf8.Valid(raw) {
				return "", false
			}
			var out string
			if json.Unmarshal(raw, &out) != nil {
				return "", false
			}
			return out, true
		case c == '\\':
			plain = false
			s.pos += 2
		case c < 0x20:
			return "", false
		default:
			if c >= 0x80 {
				plain = false
			}
			s.pos++
		}
	}
	return "", false
}

// number reads a number token, checked against JSON's grammar.
func (s *jscan) number() (string, bool) {
	start := s.pos
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if digits() == 0 {
		return "", false
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return "", false
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return "", false
		}
	}
	// A number runs into the next token only through a delimiter.
	if s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
		default:
			return "", false
		}
	}
	return string(s.data[start:s.pos]), true
}

// intern returns b as a string, shared with earlier equal short names.
func (s *jscan) intern(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	if str, ok := s.names[string(b)]; ok {
		return str
	}
	str := string(b)
	s.names[str] = str
	return str
}
