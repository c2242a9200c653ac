package pte

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// wrDiff returns "" when a and b are equal, else the path of the first
// difference. Floats compare by bits (NaN payloads must survive), nil and
// empty slices differ (presence is meaningful in a program).
func wrDiff(a, b any) string {
	return diffValue(reflect.ValueOf(a), reflect.ValueOf(b), "")
}

func diffValue(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one side invalid"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %v vs %v", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return diffValue(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v (absent vs empty)", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d vs %d", path, a.Len(), b.Len())
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				return path + ": bytes differ"
			}
			return ""
		}
		for i := 0; i < a.Len(); i++ {
			if d := diffValue(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := diffValue(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float32, reflect.Float64:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Float(), b.Float())
		}
		return ""
	default:
		if !a.CanInterface() { // reached through Program's plans
			if fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Sprintf("%s: %v vs %v", path, a, b)
			}
			return ""
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Interface(), b.Interface())
		}
		return ""
	}
}

// wrWithSegments returns a shallow copy of p whose Segments are segs: what
// a re-written file should decode to.
func wrWithSegments(p *Program, segs []*DataSegment) *Program {
	q := *p
	q.Segments = segs
	return &q
}

// wrData reads a whole payload.
func wrData(p *Payload, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return p.Data()
}

// wrOpenSources opens path and returns it with its segment readers; the
// file is closed when the test ends.
func wrOpenSources(t testing.TB, path string) (*File, []*io.SectionReader) {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	srcs, err := f.SegmentReaders()
	if err != nil {
		t.Fatal(err)
	}
	return f, srcs
}

// wrSection is a SectionReader over b.
func wrSection(b []byte) *io.SectionReader {
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}

// wrOpenBytes reads a written file back.
func wrOpenBytes(t testing.TB, b []byte) *File {
	t.Helper()
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("re-reading written file: %v", err)
	}
	return f
}

// wrComparePayloads checks that every segment, delegate payload and
// constant of got holds the same bytes as in want. segIndex maps want's
// segment indices to got's.
func wrComparePayloads(t *testing.T, want, got *File, segIndex []int) {
	t.Helper()
	for i, s := range want.Program.Segments {
		if s.Size == 0 {
			continue
		}
		w, werr := wrData(want.Segment(i))
		g, gerr := wrData(got.Segment(segIndex[i]))
		if werr != nil || gerr != nil || !bytes.Equal(w, g) {
			t.Errorf("segment %d: bytes differ (errors %v, %v)", i, werr, gerr)
		}
	}
	for pi, ep := range want.Program.Plans() {
		for di := range ep.Delegates {
			w, werr := wrData(want.DelegateData(pi, di))
			g, gerr := wrData(got.DelegateData(pi, di))
			if wrNowReachable(want, got, werr, g, gerr) {
				continue
			}
			if (werr == nil) != (gerr == nil) || !bytes.Equal(w, g) {
				t.Errorf("plan %d delegate %d: payload differs (error %v, was %v)", pi, di, gerr, werr)
			}
		}
	}
	n := len(want.Program.ConstantBuffer)
	if cs := want.Program.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		n = len(cs.Offsets)
	}
	for i := 1; i < n; i++ {
		w, werr := wrData(want.ConstantData(i))
		g, gerr := wrData(got.ConstantData(i))
		if wrNowReachable(want, got, werr, g, gerr) {
			continue
		}
		if (werr == nil) != (gerr == nil) || !bytes.Equal(w, g) {
			t.Errorf("constant %d: bytes differ (error %v, was %v)", i, gerr, werr)
		}
	}
}

// wrNowReachable reports whether a payload that want could not locate
// reads back from got empty. Write lays segments out anew, so an empty
// segment is always locatable afterwards: one that want could not reach for
// lack of an extended header or of a segment base offset in it (the writer adds the header whenever the
// program loads data from a segment), or one whose stored offset put it
// past the end of want's file. Non-empty segments of either kind never get
// this far: SegmentReaders refuses them.
func wrNowReachable(want, got *File, werr error, g []byte, gerr error) bool {
	var fe *FormatError
	if werr == nil || gerr != nil || len(g) != 0 || !errors.As(werr, &fe) {
		return false
	}
	noHeader := fe.Code == CodeNotFound && (want.Header == nil || want.Header.SegmentBaseOffset == 0) && got.Header != nil
	pastEOF := fe.Code == CodeInvalidArgument && strings.HasPrefix(fe.Path, "segments[") && strings.Contains(fe.Msg, "past the end")
	return noHeader || pastEOF
}

// wrErrorFindings counts Verify's Error findings by path and code.
func wrErrorFindings(f *File) map[string]int {
	m := map[string]int{}
	for _, fd := range f.Verify() {
		if fd.Severity == SeverityError {
			m[fd.Err.Path+" "+fd.Err.Code.String()]++
		}
	}
	return m
}

// wrWriteUnchecked writes p like Write but without the reference check and
// the read-back verification: tests use it to craft files that the reader
// must refuse.
func wrWriteUnchecked(t testing.TB, p *Program, segs []*io.SectionReader, opts *WriteOptions) []byte {
	t.Helper()
	pl, err := layoutWrite(p, segs, opts)
	if err != nil {
		t.Fatalf("layout: %v", err)
	}
	var buf bytes.Buffer
	if _, err := pl.writeTo(&buf); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes()
}
