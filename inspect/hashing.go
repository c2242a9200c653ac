package inspect

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
)

// span is a byte range of a file: a segment, or the whole file.
type span struct{ off, n int64 }

// digests holds the SHA-256 of each span hashed.
type digests map[span]Digest

// hashChunk bounds the memory of a hashing pass: one buffer of this size
// per file.
const hashChunk = 1 << 20

// hashSpans returns the SHA-256 of every span of r, reading each byte of
// r at most once: the spans (which may overlap, as the whole file overlaps
// each segment) are hashed together in one pass from the front.
func hashSpans(r io.ReaderAt, spans []span, progress func(n int64)) (digests, error) {
	out, _, err := hashPass([]io.ReaderAt{r}, spans, progress)
	return out, err
}

// hashSpanPair is hashSpans on two files with the same spans (two programs
// with the same layout), read in lockstep: as long as a span's bytes are
// the same in both files they are hashed once, for both.
func hashSpanPair(a, b io.ReaderAt, spans []span, progress func(n int64)) (digests, digests, error) {
	return hashPass([]io.ReaderAt{a, b}, spans, progress)
}

// spanState is the hashing of one span in one or two files: shared while
// the files agree on its bytes, then one hash per file.
type spanState struct {
	sp     span
	h      [2]hash.Hash
	shared bool
}

// hashPass hashes spans of every reader of rs in one pass, calling
// progress (when not nil) with the bytes read after each chunk.
func hashPass(rs []io.ReaderAt, spans []span, progress func(n int64)) (digests, digests, error) {
	// One state per distinct span; an empty span needs no reading.
	states := map[span]*spanState{}
	var bounds []int64
	for _, sp := range spans {
		if sp.n < 0 || sp.off < 0 || sp.off > 1<<62 || sp.n > 1<<62 {
			return nil, nil, fmt.Errorf("inspect: hashing: bad range %d+%d", sp.off, sp.n)
		}
		if _, ok := states[sp]; ok {
			continue
		}
		states[sp] = &spanState{sp: sp, h: [2]hash.Hash{sha256.New()}, shared: true}
		bounds = append(bounds, sp.off, sp.off+sp.n)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	byStart := make([]*spanState, 0, len(states))
	for _, st := range states {
		byStart = append(byStart, st)
	}
	slices.SortFunc(byStart, func(x, y *spanState) int {
		if x.sp.off != y.sp.off {
			return cmp.Compare(x.sp.off, y.sp.off)
		}
		return cmp.Compare(x.sp.n, y.sp.n)
	})

	bufs := make([][]byte, len(rs))
	var active []*spanState
	next := 0
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		// The active set is constant between two bounds.
		active = slices.DeleteFunc(active, func(st *spanState) bool { return st.sp.off+st.sp.n <= lo })
		for next < len(byStart) && byStart[next].sp.off <= lo {
			if st := byStart[next]; st.sp.off+st.sp.n > lo {
				active = append(active, st)
			}
			next++
		}
		if len(active) == 0 {
			continue
		}
		for pos := lo; pos < hi; {
			n := min(hi-pos, hashChunk)
			for k, r := range rs {
				if bufs[k] == nil {
					bufs[k] = make([]byte, hashChunk)
				}
				got, err := r.ReadAt(bufs[k][:n], pos)
				if int64(got) < n {
					if err == nil || errors.Is(err, io.EOF) {
						err = io.ErrUnexpectedEOF
					}
					return nil, nil, fmt.Errorf("inspect: hashing bytes %d..%d: %w", pos, pos+n, err)
				}
			}
			same := len(rs) == 1 || bytes.Equal(bufs[0][:n], bufs[1][:n])
			for _, st := range active {
				if err := st.feed(bufs, n, same, len(rs)); err != nil {
					return nil, nil, err
				}
			}
			pos += n
			if progress != nil {
				progress(n * int64(len(rs)))
			}
		}
	}
	var out [2]digests
	for k := range rs {
		out[k] = make(digests, len(states))
	}
	for sp, st := range states {
		for k := range rs {
			h := st.h[0]
			if !st.shared {
				h = st.h[k]
			}
			out[k][sp] = Digest{Hex: hex.EncodeToString(h.Sum(nil))}
		}
	}
	return out[0], out[1], nil
}

// feed adds the first n bytes of each file's buffer to the span's hash:
// once when they are the same and the span is still shared, else per file
// (splitting a shared hash into two copies of its state first).
func (st *spanState) feed(bufs [][]byte, n int64, same bool, files int) error {
	if st.shared && !same && files == 2 {
		m, ok := st.h[0].(encoding.BinaryMarshaler)
		if !ok {
			return errors.New("inspect: hashing: SHA-256 state cannot be copied")
		}
		state, err := m.MarshalBinary()
		if err != nil {
			return err
		}
		h := sha256.New()
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
			return err
		}
		st.h[1], st.shared = h, false
	}
	if st.shared {
		st.h[0].Write(bufs[0][:n])
		return nil
	}
	for k := 0; k < files; k++ {
		st.h[k].Write(bufs[k][:n])
	}
	return nil
}
