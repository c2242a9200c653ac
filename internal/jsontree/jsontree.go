// Package jsontree is ptekit's one JSON parser: it reads JSON text into a
// tree of Values that keeps the byte offset of every value and member
// name, the literal text of numbers and the order of object members, so
// that whoever reads the tree can say where a wrong value is.
//
// It accepts exactly what encoding/json accepts, and reads strings as
// encoding/json decodes them (an unpaired UTF-16 surrogate or an invalid
// UTF-8 byte becomes U+FFFD). Options add what some callers need: limits
// for untrusted input, refusing a member given twice, and Python's
// json.loads extensions (NaN, Infinity, -Infinity), each use reported.
package jsontree

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the type of a JSON value.
type Kind uint8

// The kinds of Value.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}

// String names the kind for messages, with its article: "an object".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Value is a parsed JSON value.
type Value struct {
	Kind Kind
	// Bool is a boolean's value.
	Bool bool
	// Off is the offset of the value's first byte in the parsed text.
	Off int
	// Text is a number's literal text or a string's decoded value.
	Text string
	// Elems holds an array's elements, or an object's member values in
	// the order of Keys. A member given twice is kept twice unless
	// Options.RefuseDuplicates.
	Elems []*Value
	// Keys and KeyOffs are an object's member names, decoded, and the
	// offsets of their opening quotes.
	Keys    []string
	KeyOffs []int
}

// Member returns the value of member key of an object, the last when it
// is given more than once (as Python's dict and encoding/json keep it),
// or nil.
func (v *Value) Member(key string) *Value {
	for i := len(v.Keys) - 1; i >= 0; i-- {
		if v.Keys[i] == key {
			return v.Elems[i]
		}
	}
	return nil
}

// Options are the limits and extensions of a parse. The zero value reads
// standard JSON without limits.
type Options struct {
	// MaxDepth is the most arrays and objects nested in one another;
	// 0 means no limit.
	MaxDepth int
	// MaxValues is the most values (member names not counted) read;
	// 0 means no limit.
	MaxValues int
	// MaxIntDigits is the most digits of an integer (a number without
	// fraction or exponent); 0 means no limit.
	MaxIntDigits int
	// RefuseDuplicates makes a member given twice in an object an error.
	RefuseDuplicates bool
	// Python accepts the NaN, Infinity and -Infinity literals as numbers,
	// as Python's json.loads does. Each use of them, and each unpaired
	// UTF-16 surrogate in a \u escape (which json.loads keeps and Go
	// cannot), is returned as an Extension.
	Python bool
}

// SyntaxError is text that is not JSON (or not what the options allow).
type SyntaxError struct {
	Off int // offset of the byte where reading failed
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Off) }

// Limit names one of the limits of Options.
type Limit uint8

// The limits a LimitError reports.
const (
	LimitDepth     Limit = iota + 1 // Options.MaxDepth
	LimitValues                     // Options.MaxValues
	LimitIntDigits                  // Options.MaxIntDigits
)

// LimitError is JSON that goes past one of the limits of Options.
type LimitError struct {
	Limit Limit
	Max   int // the limit
	N     int // for LimitIntDigits, the digits found
	Off   int // offset of the value that goes past it
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitDepth:
		return fmt.Sprintf("nesting deeper than %d levels at offset %d", e.Max, e.Off)
	case LimitValues:
		return fmt.Sprintf("more than %d JSON values at offset %d", e.Max, e.Off)
	}
	return fmt.Sprintf("integer with %d digits, more than %d, at offset %d", e.N, e.Max, e.Off)
}

// Extension is a use of one of Python's extensions of JSON (Options.Python).
type Extension struct {
	Off int
	Msg string
}

// Parse parses data, one JSON value with optional white space around it.
// With Options.Python it also returns where the text uses Python's
// extensions of JSON.
func Parse(data []byte, opt Options) (*Value, []Extension, error) {
	return new(Arena).Parse(data, opt)
}

// Arena parses texts one after another into the same memory, for a
// caller that reads each tree into values of its own and drops it (a
// blob's metadata, read once per delegate): the tree Parse returns, its
// Values and their slices, may be used only until the next Parse on the
// Arena. The strings in it (Text, Keys) are ordinary strings and stay
// valid; member names are interned across texts, up to maxArenaNames.
// The zero Arena is ready to use; it is not safe for concurrent use.
type Arena struct {
	b valueBuilder
	p parser[*Value] // its stacks and buffer, and the names it interned
}

// maxArenaNames bounds the member names an Arena keeps interned from one
// text to the next (the same few in every blob's metadata): past it the
// next text starts a new set.
const maxArenaNames = 1024

// Parse is the package's Parse into a's memory.
func (a *Arena) Parse(data []byte, opt Options) (*Value, []Extension, error) {
	b := &a.b
	b.vals.Reset()
	b.elems.Reset()
	b.keys.Reset()
	b.offs.Reset()
	if len(b.vals.l.made) == 0 { // the first text sizes the first blocks
		b.hint(data)
	}
	names := a.p.names
	if names == nil || len(names) > maxArenaNames {
		names = map[string]string{}
	}
	a.p = parser[*Value]{s: data, opt: opt, b: b, names: names,
		elems: a.p.elems[:0], keys: a.p.keys[:0], koffs: a.p.koffs[:0], buf: a.p.buf[:0]}
	return a.p.run()
}

// Builder makes a caller's own tree as Build reads the text, for a caller
// that needs more than a Value (a map of members, marks of its own) and
// would otherwise convert the whole tree. The slices given to Array and
// Object are the parser's, valid only during the call.
type Builder[T any] interface {
	// Scalar makes a null, boolean, number or string at offset off:
	// text is a number's literal or a string's decoded value.
	Scalar(kind Kind, off int, text string, b bool) T
	// Array makes an array from its elements.
	Array(off int, elems []T) T
	// Object makes an object from its members in order: names, offsets
	// of the names and values.
	Object(off int, keys []string, keyOffs []int, elems []T) T
}

// SpanBuilder is a Builder that takes the text of a number, and of a
// string with nothing to decode (ASCII without escapes), as where it is
// in the data: Build then makes no string for them (a manifest of many
// engines has hundreds of thousands).
type SpanBuilder[T any] interface {
	Builder[T]
	// Span makes a number or a string at offset off whose text (a
	// number's literal, a string's value) is data[start:end].
	Span(kind Kind, off, start, end int) T
}

// Build parses data as Parse does, making the tree with b.
func Build[T any](data []byte, opt Options, b Builder[T]) (T, []Extension, error) {
	p := &parser[T]{s: data, opt: opt, b: b, names: map[string]string{}}
	p.span, _ = b.(SpanBuilder[T])
	return p.run()
}

// run parses p.s whole.
func (p *parser[T]) run() (T, []Extension, error) {
	p.space()
	v, err := p.value()
	p.space()
	if err == nil && p.p != len(p.s) {
		err = p.errf("extra data after the JSON value")
	}
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return v, p.ext, nil
}

// Blocks hands out zero Ts from blocks, one allocation per block, for a
// Builder that makes many small nodes. Blocks start small, as most texts
// read are (a blob's metadata has a few dozen values, and a program may
// hold thousands of blobs), and double up to 256 Ts.
type Blocks[T any] struct{ l blockList[T] }

// Reset makes every T New handed out free to be handed out again
// (zeroed), keeping the blocks: nothing may use those Ts afterwards.
func (b *Blocks[T]) Reset() { b.l.reset() }

// Hint sizes the first block for n Ts (at most 256; none for 0), so that
// a small text, such as a blob's metadata read once per delegate, takes one block
// of its size instead of doubling blocks it mostly leaves unused. Give it
// the values Bounds counts in the text.
func (b *Blocks[T]) Hint(n int) { b.l.hint = min(maxBlock, max(0, n)) }

// maxBlock is the most Ts a Blocks block holds.
const maxBlock = 256

// New returns a pointer to a zero T.
func (b *Blocks[T]) New() *T { return &b.l.cut(1, maxBlock)[0] }

// Bounds returns at least the number of values data holds if it is JSON,
// and at least the number of object member names: every value but the
// outermost is the first member of a container or follows a comma, so
// one more than the commas and openers counts each, and a member name is
// followed by a colon. Both are exact for compact JSON unless strings
// hold such bytes (or containers are empty). Counting reads data four
// times at memory speed, which costs less than the blocks a guess from
// the text's length leaves unused (a TensorRT blob's metadata: 250
// bytes, 21 values). The elements and member values of all containers
// number values-1.
func Bounds(data []byte) (values, names int) {
	values = 1 + bytes.Count(data, []byte{','}) + bytes.Count(data, []byte{'['}) + bytes.Count(data, []byte{'{'})
	return values, bytes.Count(data, []byte{':'})
}

// Slices hands out copies of short slices cut from shared blocks, for a
// Builder that keeps the members of many small containers: a manifest of
// many engines has hundreds of thousands of objects of a few members, and
// one allocation per block instead of per container is most of what
// building their tree allocates. A copy has its own capacity, so that
// appending to it never writes into its neighbour. Slices longer than a
// block get an allocation of their own.
type Slices[T any] struct{ l blockList[T] }

// Reset makes the blocks of every copy Copy returned free to be cut
// again: nothing may use those copies afterwards.
func (b *Slices[T]) Reset() { b.l.reset() }

// Hint sizes the first block for n Ts in all (at most maxSliceBlock; none
// for 0), so that the members of a small text take one block of their
// number.
func (b *Slices[T]) Hint(n int) { b.l.hint = min(maxSliceBlock, max(0, n)) }

// maxSliceBlock is the most Ts a Slices block holds; a slice of more
// than a quarter of it is allocated alone.
const maxSliceBlock = 1024

// Copy returns a copy of s: never nil, as an empty container's slice is
// not.
func (b *Slices[T]) Copy(s []T) []T {
	c := b.Make(len(s))
	copy(c, s)
	return c
}

// Make returns n zero Ts, cut from a block as Copy's copies are (and, like
// them, never nil and with their own capacity): for a caller that fills
// many small slices, such as the tables of an export's plans.
func (b *Slices[T]) Make(n int) []T {
	if n == 0 {
		return make([]T, 0) // points at the runtime's zero base: no allocation
	}
	if n > maxSliceBlock/4 {
		return make([]T, n)
	}
	return b.l.cut(n, maxSliceBlock)
}

// blockList is the blocks of a Blocks or a Slices: the one being cut, and
// every one made, kept to be cut again after a reset.
type blockList[T any] struct {
	free []T // the rest of the block being cut
	size int // the size of the last block made
	hint int // the first block's size, when Hint gave one
	made [][]T
	next int // the first block of made not taken since the last reset
}

func (l *blockList[T]) reset() { l.free, l.next = nil, 0 }

// cut returns the next n Ts of the block being cut, with their own
// capacity, taking a block (of at most most Ts, unless n is more) when
// it has fewer.
func (l *blockList[T]) cut(n, most int) []T {
	if len(l.free) < n {
		l.take(n, most)
	}
	c := l.free[:n:n]
	l.free = l.free[n:]
	return c
}

// take makes free a block of at least n Ts: the next kept block that long
// (zeroed, so that nothing the last tree held there is kept alive), else a
// new one, of the hinted size first, then twice the last from 16 up to
// most.
func (l *blockList[T]) take(n, most int) {
	for l.next < len(l.made) && len(l.made[l.next]) < n {
		l.next++ // a kept block too short for this copy
	}
	if l.next < len(l.made) {
		l.free = l.made[l.next]
		clear(l.free)
	} else {
		if l.hint > 0 {
			l.size, l.hint = l.hint, 0
		} else {
			l.size = min(most, max(16, 2*l.size))
		}
		l.free = make([]T, max(l.size, n))
		l.made = append(l.made, l.free)
	}
	l.next++
}

// valueBuilder makes Values.
type valueBuilder struct {
	vals  Blocks[Value]
	elems Slices[*Value]
	keys  Slices[string]
	offs  Slices[int]
}

// hint sizes the first blocks for the text data.
func (b *valueBuilder) hint(data []byte) {
	values, names := Bounds(data)
	b.vals.Hint(values)
	b.elems.Hint(values - 1)
	b.keys.Hint(names)
	b.offs.Hint(names)
}

func (b *valueBuilder) newValue(kind Kind, off int) *Value {
	v := b.vals.New()
	v.Kind, v.Off = kind, off
	return v
}

func (b *valueBuilder) Scalar(kind Kind, off int, text string, boolean bool) *Value {
	v := b.newValue(kind, off)
	v.Text, v.Bool = text, boolean
	return v
}

func (b *valueBuilder) Array(off int, elems []*Value) *Value {
	v := b.newValue(Array, off)
	v.Elems = b.elems.Copy(elems)
	return v
}

func (b *valueBuilder) Object(off int, keys []string, keyOffs []int, elems []*Value) *Value {
	v := b.newValue(Object, off)
	v.Keys = b.keys.Copy(keys)
	v.KeyOffs = b.offs.Copy(keyOffs)
	v.Elems = b.elems.Copy(elems)
	return v
}

type parser[T any] struct {
	s      []byte
	p      int
	opt    Options
	b      Builder[T]
	span   SpanBuilder[T] // b, when it takes spans
	depth  int
	values int
	ext    []Extension
	// Member values, names and name offsets of the containers being read,
	// stacked, so that the builder gets each container's members in one
	// slice (a manifest of many engines has hundreds of thousands of
	// small objects).
	elems []T
	keys  []string
	koffs []int
	// names holds each short plain member name once: the same few names
	// repeat in every object. (Values are not interned: they are mostly
	// unique, and the map would only grow.)
	names map[string]string
	// buf is reused to decode strings with escapes.
	buf []byte
}

// maxInterned is the longest member name interned (parser.names).
const maxInterned = 16

// dupScan is the size of object up to which a duplicate member is looked
// for by a scan of the names; past it, a map keeps the check linear.
const dupScan = 16

func (p *parser[T]) errf(format string, args ...any) error {
	return &SyntaxError{Off: p.p, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser[T]) space() {
	for p.p < len(p.s) {
		switch p.s[p.p] {
		case ' ', '\t', '\n', '\r':
			p.p++
		default:
			return
		}
	}
}

func (p *parser[T]) hasPrefix(lit string) bool {
	return len(p.s)-p.p >= len(lit) && string(p.s[p.p:p.p+len(lit)]) == lit
}

func (p *parser[T]) value() (T, error) {
	var zero T
	if p.p >= len(p.s) {
		return zero, p.errf("expecting a value, found the end of the text")
	}
	if p.opt.MaxValues > 0 {
		if p.values++; p.values > p.opt.MaxValues {
			return zero, &LimitError{Limit: LimitValues, Max: p.opt.MaxValues, Off: p.p}
		}
	}
	off := p.p
	switch c := p.s[p.p]; {
	case c == '{' || c == '[':
		if p.depth++; p.opt.MaxDepth > 0 && p.depth > p.opt.MaxDepth {
			return zero, &LimitError{Limit: LimitDepth, Max: p.opt.MaxDepth, Off: p.p}
		}
		v, err := p.container()
		p.depth--
		return v, err
	case c == '"':
		if p.span != nil {
			if end, ok := p.plainStr(); ok {
				return p.span.Span(String, off, off+1, end), nil
			}
		}
		s, err := p.str(false)
		if err != nil {
			return zero, err
		}
		return p.b.Scalar(String, off, s, false), nil
	case c == '-' || c >= '0' && c <= '9':
		start := p.p
		end, err := p.numberEnd()
		if err != nil {
			return zero, err
		}
		if p.span != nil {
			return p.span.Span(Number, off, start, end), nil
		}
		return p.b.Scalar(Number, off, string(p.s[start:end]), false), nil
	case c == 't' && p.hasPrefix("true"):
		p.p += len("true")
		return p.b.Scalar(Bool, off, "", true), nil
	case c == 'f' && p.hasPrefix("false"):
		p.p += len("false")
		return p.b.Scalar(Bool, off, "", false), nil
	case c == 'n' && p.hasPrefix("null"):
		p.p += len("null")
		return p.b.Scalar(Null, off, "", false), nil
	}
	if p.opt.Python {
		for _, lit := range [...]string{"NaN", "Infinity"} {
			if p.hasPrefix(lit) {
				p.extension(p.p, "%s is not JSON (Python's json module accepts it)", lit)
				p.p += len(lit)
				return p.b.Scalar(Number, off, lit, false), nil
			}
		}
	}
	r, _ := utf8.DecodeRune(p.s[p.p:])
	return zero, p.errf("expecting a value, found %q", r)
}

// extension records a use of a Python extension at offset off.
func (p *parser[T]) extension(off int, format string, args ...any) {
	p.ext = append(p.ext, Extension{Off: off, Msg: fmt.Sprintf(format, args...)})
}

// container reads the object or array whose opener, '{' or '[', is at p.
func (p *parser[T]) container() (T, error) {
	var zero T
	off, obj := p.p, p.s[p.p] == '{'
	closing, what := byte(']'), "array"
	if obj {
		closing, what = '}', "object"
	}
	mark, emark := len(p.keys), len(p.elems)
	defer func() {
		clear(p.elems[emark:]) // drop references for the collector
		p.elems, p.keys, p.koffs = p.elems[:emark], p.keys[:mark], p.koffs[:mark]
	}()
	var seen map[string]bool // an object's names, once it outgrows dupScan
	p.p++
	p.space()
	closed := p.p < len(p.s) && p.s[p.p] == closing // empty
	if closed {
		p.p++
	}
	for !closed {
		p.space()
		if obj {
			if p.p >= len(p.s) || p.s[p.p] != '"' {
				return zero, p.errf("expecting a property name in double quotes")
			}
			koff := p.p
			k, err := p.str(true)
			if err != nil {
				return zero, err
			}
			if p.opt.RefuseDuplicates {
				names := p.keys[mark:]
				if seen == nil && len(names) >= dupScan {
					seen = make(map[string]bool, 2*len(names))
					for _, n := range names {
						seen[n] = true
					}
				}
				if seen[k] || seen == nil && slices.Contains(names, k) {
					return zero, &SyntaxError{Off: koff, Msg: fmt.Sprintf("member %q given twice", k)}
				}
				if seen != nil {
					seen[k] = true
				}
			}
			p.space()
			if p.p >= len(p.s) || p.s[p.p] != ':' {
				return zero, p.errf("expecting ':' after property name %q", k)
			}
			p.p++
			p.space()
			p.keys, p.koffs = append(p.keys, k), append(p.koffs, koff)
		}
		e, err := p.value()
		if err != nil {
			return zero, err
		}
		p.elems = append(p.elems, e)
		if closed, err = p.next(closing, what); err != nil {
			return zero, err
		}
	}
	if obj {
		return p.b.Object(off, p.keys[mark:], p.koffs[mark:], p.elems[emark:]), nil
	}
	return p.b.Array(off, p.elems[emark:]), nil
}

// next reads the ',' or the closing delimiter after a member or element
// of a container; closed reports the closing one.
func (p *parser[T]) next(closing byte, container string) (closed bool, err error) {
	p.space()
	if p.p >= len(p.s) {
		return false, p.errf("unterminated %s", container)
	}
	switch p.s[p.p] {
	case ',':
		p.p++
		return false, nil
	case closing:
		p.p++
		return true, nil
	}
	return false, p.errf("expecting ',' or '%c' in %s", closing, container)
}

// numberEnd reads a number, checked against JSON's grammar, and returns
// where its text ends (it starts at p).
func (p *parser[T]) numberEnd() (int, error) {
	start := p.p
	if p.opt.Python && p.hasPrefix("-Infinity") {
		p.extension(p.p, "-Infinity is not JSON (Python's json module accepts it)")
		p.p += len("-Infinity")
		return p.p, nil
	}
	digits := func() int {
		n := 0
		for p.p < len(p.s) && p.s[p.p] >= '0' && p.s[p.p] <= '9' {
			p.p++
			n++
		}
		return n
	}
	if p.s[p.p] == '-' {
		p.p++
	}
	intDigits, whole := 1, true
	if p.p < len(p.s) && p.s[p.p] == '0' {
		p.p++
	} else if intDigits = digits(); intDigits == 0 {
		return 0, p.errf("expecting a digit")
	}
	if p.p < len(p.s) && p.s[p.p] == '.' {
		p.p++
		whole = false
		if digits() == 0 {
			return 0, p.errf("expecting a digit after '.'")
		}
	}
	if p.p < len(p.s) && (p.s[p.p] == 'e' || p.s[p.p] == 'E') {
		p.p++
		whole = false
		if p.p < len(p.s) && (p.s[p.p] == '+' || p.s[p.p] == '-') {
			p.p++
		}
		if digits() == 0 {
			return 0, p.errf("expecting a digit in the exponent")
		}
	}
	if whole && p.opt.MaxIntDigits > 0 && intDigits > p.opt.MaxIntDigits {
		return 0, &LimitError{Limit: LimitIntDigits, Max: p.opt.MaxIntDigits, N: intDigits, Off: start}
	}
	return p.p, nil
}

// plainStr reads the string whose opening quote is at p when it is plain
// ASCII without escapes, and returns the offset of its closing quote;
// otherwise it reads nothing and ok is false.
func (p *parser[T]) plainStr() (end int, ok bool) {
	for i := p.p + 1; i < len(p.s); i++ {
		switch c := p.s[i]; {
		case c == '"':
			p.p = i + 1
			return i, true
		case c == '\\' || c >= utf8.RuneSelf || c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// str reads the string whose opening quote is at p. Plain ASCII without
// escapes is taken as it is (a short member name interned); anything else
// is decoded.
func (p *parser[T]) str(key bool) (string, error) {
	start := p.p + 1
	end, ok := p.plainStr()
	if !ok {
		p.p = start
		return p.decode()
	}
	raw := p.s[start:end]
	if !key || len(raw) > maxInterned {
		return string(raw), nil
	}
	s, ok := p.names[string(raw)]
	if !ok {
		s = string(raw)
		p.names[s] = s
	}
	return s, nil
}

// decode reads a string that has escapes or bytes past ASCII, from its
// first byte at p.
func (p *parser[T]) decode() (string, error) {
	b := p.buf[:0]
	defer func() { p.buf = b[:0] }()
	for {
		run := p.p
		for p.p < len(p.s) && p.s[p.p] != '"' && p.s[p.p] != '\\' && p.s[p.p] >= 0x20 && p.s[p.p] < utf8.RuneSelf {
			p.p++
		}
		b = append(b, p.s[run:p.p]...)
		if p.p >= len(p.s) {
			return "", p.errf("unterminated string")
		}
		switch c := p.s[p.p]; {
		case c == '"':
			p.p++
			return string(b), nil
		case c < 0x20:
			return "", p.errf("invalid control character %q in string", rune(c))
		case c >= utf8.RuneSelf:
			// Invalid UTF-8 reads as U+FFFD, a byte at a time, as
			// encoding/json reads it.
			r, n := utf8.DecodeRune(p.s[p.p:])
			b = utf8.AppendRune(b, r)
			p.p += n
			continue
		}
		// A backslash escape.
		if p.p+1 >= len(p.s) {
			return "", p.errf("unterminated string")
		}
		e := p.s[p.p+1]
		if r := simpleEscapes[e]; r != 0 {
			b = append(b, r)
			p.p += 2
			continue
		}
		if e != 'u' {
			return "", p.errf("invalid escape \\%c", e)
		}
		r, ok := p.hex4(p.p + 2)
		if !ok {
			return "", p.errf("invalid \\u escape")
		}
		p.p += 6
		if utf16.IsSurrogate(r) {
			lo, ok := rune(-1), false
			if r < 0xdc00 && p.p+1 < len(p.s) && p.s[p.p] == '\\' && p.s[p.p+1] == 'u' {
				lo, ok = p.hex4(p.p + 2)
			}
			if ok && lo >= 0xdc00 && lo <= 0xdfff {
				r = utf16.DecodeRune(r, lo)
				p.p += 6
			} else {
				if p.opt.Python {
					p.extension(p.p-6, "unpaired UTF-16 surrogate \\u%04x (Python's json module accepts it; ptekit reads it as U+FFFD)", r)
				}
				r = utf8.RuneError
			}
		}
		b = utf8.AppendRune(b, r)
	}
}

// simpleEscapes holds the byte each one-letter escape stands for, 0 for
// the other letters.
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads the four hex digits of a \u escape at at.
func (p *parser[T]) hex4(at int) (rune, bool) {
	var b [2]byte
	if at+4 > len(p.s) {
		return 0, false
	}
	if _, err := hex.Decode(b[:], p.s[at:at+4]); err != nil {
		return 0, false
	}
	return rune(b[0])<<8 | rune(b[1]), true
}
