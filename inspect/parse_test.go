package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"testing"
)

// tokenNode is the reference reading of a JSON value as nodes, through
// encoding/json's token interface (what Diff used before its own parser):
// parse must read every input to the same tree, or fail where it fails.
func tokenNode(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var read func(depth int) (*node, error)
	read = func(depth int) (*node, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			if depth >= maxDepth { // at most maxDepth arrays and objects nested
				return nil, fmt.Errorf("too deep")
			}
			if t == '{' {
				n := &node{kind: 'o', obj: map[string]*node{}}
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return nil, err
					}
					k, _ := kt.(string)
					v, err := read(depth + 1)
					if err != nil {
						return nil, err
					}
					if _, dup := n.obj[k]; !dup {
						n.keys = append(n.keys, k)
					}
					n.obj[k] = v
				}
				_, err := dec.Token()
				return n, err
			}
			n := &node{kind: 'a', arr: []*node{}}
			for dec.More() {
				v, err := read(depth + 1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			_, err := dec.Token()
			return n, err
		case string:
			return &node{kind: 's', str: t}, nil
		case json.Number:
			return &node{kind: 'n', str: string(t)}, nil
		case bool:
			return &node{kind: 'b', str: strconv.FormatBool(t)}, nil
		}
		return &node{kind: 'z'}, nil
	}
	n, err := read(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return n, nil
}

// FuzzParseNode: the parser of Diff reads what the
// token reader reads, and refuses what it refuses.
func FuzzParseNode(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"d","e":-1.5e300,"f":true,"g":false}`,
		` { "k" : "v\u00e9\"\\" , "k" : [ ] , "é": "\ud800x" } `,
		"\"\xff\xfe\"", `[[[[[]]]]]`, `{"a":1} {"b":2}`, `[1,]`, `"x`, ``, `0.5E-3`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parse(data)
		want, werr := tokenNode(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: parse error %v, token reader error %v", data, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parse read %s, token reader %s", data, got.raw(), want.raw())
		}
	})
}

// FuzzIndenter: Encode's streaming indentation writes what json.Indent
// writes for the compact text an Encoder produces, however the text is
// split into writes.
func FuzzIndenter(f *testing.F) {
	for _, s := range []string{`{"a":[1,{},[],{"b":"x\"]}{,:"}],"c":null}`, `[]`, `"s"`, `{"":[[[]]]}`} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			return
		}
		compact.WriteByte('\n') // as Encoder.Encode ends its value
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		ind := &indenter{w: bufio.NewWriter(&got)}
		src := compact.Bytes()
		for len(src) > 0 {
			n := min(len(src), int(split)+1)
			ind.Write(src[:n])
			src = src[n:]
		}
		ind.w.Flush()
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%q: indenter wrote\n%s\njson.Indent\n%s", compact.Bytes(), got.Bytes(), want.Bytes())
		}
	})
}

// BenchmarkParseValid is Diff's reading of a JSON form: a document-like
// value of 20000 objects as json.Marshal writes it.
func BenchmarkParseValid(b *testing.B) {
	type tensor struct {
		Name  string  `json:"name"`
		DType string  `json:"dtype"`
		Shape []int64 `json:"shape"`
		Note  string  `json:"note,omitempty"`
	}
	var ts []tensor
	for i := range 20000 {
		ts = append(ts, tensor{Name: "t" + strconv.Itoa(i), DType: "float16", Shape: []int64{1, int64(i), 128, 16}, Note: "é\n"[:i%2*3]})
	}
	data, err := json.Marshal(map[string]any{"values": ts, "version": 1.5})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
