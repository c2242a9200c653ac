package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/pte"
)

// TestEachDelegateIsNext: Stream.EachDelegate gives the methods, the
// delegates, the problems (method by method) and the document Next gives,
// whole and narrowed to each method and backend, on the built test
// programs and every program of the shared tree, opened whole and with
// LazyPlans; and it fails as Next fails when a payload read fails.
func TestEachDelegateIsNext(t *testing.T) {
	compared := 0
	for label, open := range viewFiles(t) {
		f := open()
		compared++
		for _, opts := range viewOptions(f) {
			want := streamByNext(t, open(), opts)
			got := streamByDelegate(t, open(), opts)
			require.Equal(t, want, got, "%s %+v", label, opts)
		}
	}
	require.NotZero(t, compared, "no program opened")
}

// TestEachDelegateReadError: a payload read that fails stops EachDelegate
// with the error Next returns, after the same delegates and problems.
func TestEachDelegateReadError(t *testing.T) {
	failed := 0
	for name, data := range viewPrograms(t) {
		open := func() (*pte.File, *failingReader) {
			r := &failingReader{r: bytes.NewReader(data)}
			f, err := pte.NewFileWith(r, int64(len(data)), &pte.OpenOptions{Truncated: true, LazyPlans: true})
			if err != nil || f.Header == nil {
				return nil, nil
			}
			// Fail every read past the flatbuffer region: the payloads.
			r.from.Store(int64(f.Header.ProgramSize))
			return f, r
		}
		if f, _ := open(); f == nil {
			continue
		}
		fw, _ := open()
		want := streamByNext(t, fw, nil)
		fg, _ := open()
		got := streamByDelegate(t, fg, nil)
		require.Equal(t, want, got, name)
		if want.Err != "" {
			failed++
		}
	}
	require.NotZero(t, failed, "no program failed to read")
}

// failingReader fails every read at or past from (once set).
type failingReader struct {
	r    io.ReaderAt
	from atomic.Int64
}

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if from := r.from.Load(); from > 0 && off+int64(len(p)) > from {
		return 0, errors.New("injected read failure")
	}
	return r.r.ReadAt(p, off)
}

// streamed is what a Stream gives, as text to compare: per method its
// index, name, delegates and the number of problems once its delegates are
// read; the document at the end and the error.
type streamed struct {
	Methods  []string
	Problems []int
	Document string
	Err      string
}

func streamByNext(t *testing.T, f *pte.File, opts *Options) streamed {
	var out streamed
	st, err := NewStream(f, opts)
	require.NoError(t, err)
	err = st.Each(func(m *MethodView) error {
		out.Methods = append(out.Methods, methodText(t, m, m.Delegates))
		out.Problems = append(out.Problems, len(st.Document().Problems))
		return nil
	})
	out.finish(t, st, err)
	return out
}

func streamByDelegate(t *testing.T, f *pte.File, opts *Options) streamed {
	var out streamed
	st, err := NewStream(f, opts)
	require.NoError(t, err)
	var cur *MethodView
	var dels []*Delegate
	flush := func() {
		if cur != nil {
			require.Len(t, dels, SelectedDelegates(cur.Plan, st.b.opts.Backend))
			out.Methods = append(out.Methods, methodText(t, cur, dels))
			out.Problems = append(out.Problems, len(st.Document().Problems))
		}
		cur, dels = nil, nil
	}
	err = st.EachDelegate(func(m *MethodView) error {
		require.Nil(t, m.Delegates)
		flush()
		cur = m
		return nil
	}, func(m *MethodView, d *Delegate) error {
		require.Same(t, cur, m)
		dels = append(dels, d)
		return nil
	})
	if err == nil {
		flush()
	}
	out.finish(t, st, err)
	return out
}

// methodText is a method with the given delegates as text.
func methodText(t *testing.T, m *MethodView, dels []*Delegate) string {
	b, err := json.Marshal(struct {
		Index     int
		Name      string
		Delegates []*Delegate
	}{m.Index, m.Plan.Name, dels})
	require.NoError(t, err)
	return string(b)
}

func (out *streamed) finish(t *testing.T, st *Stream, err error) {
	if err != nil {
		out.Err = err.Error()
		// The problems of the method read part way.
		out.Problems = append(out.Problems, len(st.Document().Problems))
		return
	}
	var b bytes.Buffer
	require.NoError(t, Encode(&b, st.Document()))
	out.Document = b.String()
}
