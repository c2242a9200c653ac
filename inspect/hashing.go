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
	"maps"
	"slices"

	"github.com/ptekit/ptekit/pte"
)

// span is a byte range of a file: a segment, or the whole file.
type span struct{ off, n int64 }

// digests holds the SHA-256 of each span hashed.
type digests map[span]Digest

// hashChunk bounds the memory of a hashing pass: one buffer of this size
// per file.
const hashChunk = 1 << 20

// passed is what a pass over a file gives the document built after it:
// the SHA-256 of each span (of builder.spans) and the bytes it kept.
type passed struct {
	sums digests
	keep *keeper
}

// passFile hashes spans of f in one pass, keeping the heads of its
// delegate payloads (wantHeads) for the document.
func passFile(f *pte.File, spans []span, progress func(n int64)) (*passed, error) {
	k := newKeep()
	wantHeads(f, k)
	c, err := newCursor([]io.ReaderAt{f.ReaderAt()}, f.Size, spans, progress)
	if err != nil {
		return nil, err
	}
	c.keeps, c.mem = []*keeper{k}, [][]byte{f.Region()}
	sums, err := c.finish()
	if err != nil {
		return nil, err
	}
	return &passed{sums: sums[0], keep: k}, nil
}

// spanState is the hashing of one span in one or two files: shared while
// the files agree on its bytes, then one hash per file.
type spanState struct {
	sp     span
	h      [2]hash.Hash
	shared bool
}

// cursor is a hashing pass over one file, or two files with the same
// spans read in lockstep (a span's bytes hashed once while they are the
// same in both), read from the front at the caller's pace: each read
// returns the next bytes of each file, already fed to the digests of the
// spans covering them, for the caller to use too.
type cursor struct {
	rs       []io.ReaderAt
	progress func(n int64)
	states   map[span]*spanState
	byStart  []*spanState
	bounds   []int64
	active   []*spanState
	next     int
	bufs     [][]byte
	// keeps (nil, or one per reader, each maybe nil) hold bytes read that
	// are needed after the pass.
	keeps []*keeper
	// mem (nil, or one per reader) is each file's first bytes, already in
	// memory: they are taken from there, not read.
	mem  [][]byte
	size int64
	pos  int64
	// bi is the interval of bounds holding pos; activated says the
	// active set is that interval's.
	bi        int
	activated bool
	out       [][]byte
}

// newCursor prepares a pass over the spans of each reader of rs (one or
// two), files of size bytes: it checks the spans and prepares one state per
// distinct span.
func newCursor(rs []io.ReaderAt, size int64, spans []span, progress func(n int64)) (*cursor, error) {
	c := &cursor{rs: rs, progress: progress, states: map[span]*spanState{}, bufs: make([][]byte, len(rs)), size: size, out: make([][]byte, len(rs))}
	for _, sp := range spans {
		if sp.n < 0 || sp.off < 0 || sp.off > 1<<62 || sp.n > 1<<62 {
			return nil, fmt.Errorf("inspect: hashing: bad range %d+%d", sp.off, sp.n)
		}
		if _, ok := c.states[sp]; ok {
			continue
		}
		c.states[sp] = &spanState{sp: sp, h: [2]hash.Hash{sha256.New()}, shared: true}
		c.bounds = append(c.bounds, sp.off, sp.off+sp.n)
	}
	slices.Sort(c.bounds)
	c.bounds = slices.Compact(c.bounds)
	c.byStart = slices.Collect(maps.Values(c.states))
	slices.SortFunc(c.byStart, func(x, y *spanState) int {
		return cmp.Or(cmp.Compare(x.sp.off, y.sp.off), cmp.Compare(x.sp.n, y.sp.n))
	})
	return c, nil
}

// activate makes the active set that of the interval holding pos (the
// bytes from its bound to the next): spans ended drop out, spans starting
// join.
func (c *cursor) activate() {
	if c.activated {
		return
	}
	c.activated = true
	lo := c.bounds[c.bi]
	c.active = slices.DeleteFunc(c.active, func(st *spanState) bool { return st.sp.off+st.sp.n <= lo })
	for c.next < len(c.byStart) && c.byStart[c.next].sp.off <= lo {
		if st := c.byStart[c.next]; st.sp.off+st.sp.n > lo {
			c.active = append(c.active, st)
		}
		c.next++
	}
}

// feedChunk reads n bytes at pos from every file and feeds them to the
// active spans: once when the files agree on them.
func (c *cursor) feedChunk(pos, n int64) error {
	for k, r := range c.rs {
		if c.bufs[k] == nil {
			c.bufs[k] = make([]byte, hashChunk)
		}
		// Bytes already in memory (the region read at open) are not
		// read again.
		var got int
		if k < len(c.mem) && pos < int64(len(c.mem[k])) {
			got = copy(c.bufs[k][:n], c.mem[k][pos:])
		}
		var err error
		if int64(got) < n {
			var m int
			m, err = r.ReadAt(c.bufs[k][got:n], pos+int64(got))
			got += m
		}
		if int64(got) < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("inspect: hashing bytes %d..%d: %w", pos, pos+n, err)
		}
	}
	for k, kp := range c.keeps {
		kp.feed(pos, c.bufs[k][:n])
	}
	for k, kp := range c.keeps {
		kp.flowTo(pos, c.bufs[k][:n])
	}
	same := len(c.rs) == 1 || bytes.Equal(c.bufs[0][:n], c.bufs[1][:n])
	for _, st := range c.active {
		if err := st.feed(c.bufs, n, same, len(c.rs)); err != nil {
			return err
		}
	}
	if c.progress != nil {
		c.progress(n * int64(len(c.rs)))
	}
	return nil
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

// avail returns how many bytes the next read of at most n bytes returns:
// reads stop at a chunk's size and at span bounds.
func (c *cursor) avail(n int64) int64 {
	for c.bi+1 < len(c.bounds) && c.bounds[c.bi+1] <= c.pos {
		c.bi, c.activated = c.bi+1, false
	}
	if c.bi+1 >= len(c.bounds) {
		return 0 // past every span
	}
	return min(n, hashChunk, c.bounds[c.bi+1]-c.pos)
}

// read reads the next bytes (avail(n) of them) of each file, hashes them
// and returns them, one slice per file, valid until the next read.
func (c *cursor) read(n int64) ([][]byte, error) {
	m := c.avail(n)
	if m <= 0 {
		return nil, fmt.Errorf("inspect: hashing: no bytes to read at %d", c.pos)
	}
	c.activate()
	if err := c.feedChunk(c.pos, m); err != nil {
		return nil, err
	}
	c.pos += m
	for k := range c.out {
		c.out[k] = c.bufs[k][:m]
	}
	return c.out, nil
}

// skipTo reads (and hashes) the bytes up to offset to; bytes no span
// covers are not read.
func (c *cursor) skipTo(to int64) error {
	for c.pos < to {
		m := c.avail(to - c.pos)
		if m <= 0 {
			return fmt.Errorf("inspect: hashing: no bytes to read at %d", c.pos)
		}
		if c.activate(); len(c.active) == 0 {
			c.pos += m
			continue
		}
		if _, err := c.read(m); err != nil {
			return err
		}
	}
	return nil
}

// finish reads the rest of the files and returns the digests of every
// span, per file.
func (c *cursor) finish() ([2]digests, error) {
	var out [2]digests
	if err := c.skipTo(c.size); err != nil {
		return out, err
	}
	for k := range c.rs {
		out[k] = make(digests, len(c.states))
		for sp, st := range c.states {
			h := st.h[0]
			if !st.shared {
				h = st.h[k]
			}
			out[k][sp] = Digest{Hex: hex.EncodeToString(h.Sum(nil))}
		}
	}
	return out, nil
}
