package executor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestScratchPoolGrowReuseOrder(t *testing.T) {
	a := newFakeAllocator()
	p := NewScratchPool(a)
	use := func(device int, size int64, stream string) DeviceBuffer {
		t.Helper()
		l, err := p.Acquire(device, size, stream)
		if err != nil {
			t.Fatal(err)
		}
		buf := l.Buffer()
		if buf.Size() < size {
			t.Fatalf("lent %d bytes for %d", buf.Size(), size)
		}
		if err := l.Release(stream); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(stream); err != nil { // second release is a no-op
			t.Fatal(err)
		}
		return buf
	}
	b1 := use(0, 100, "s1")
	b2 := use(0, 50, "s2")  // reuse, ordered after s1's enqueue
	b3 := use(0, 200, "s1") // grow: new buffer first, old one freed behind e2
	b4 := use(1, 10, "s3")  // another device: its own buffer, no ordering with device 0
	b5 := use(0, 200, "s3") // exact fit: reuse
	if b1 != b2 || b3 == b1 || b5 != b3 || b4 == b3 {
		t.Errorf("buffers: %v %v %v %v %v", b1, b2, b3, b4, b5)
	}
	want := []string{
		"alloc d0 #1 100", "record d0 e1 on s1",
		"wait d0 s2 on e1", "record d0 e2 on s2",
		"alloc d0 #2 200", "free d0 #1 after e2", "wait d0 s1 on e2", "record d0 e3 on s1",
		"alloc d1 #3 10", "record d1 e4 on s3",
		"wait d0 s3 on e3", "record d0 e5 on s3",
	}
	if got := a.entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("device calls:\n got %q\nwant %q", got, want)
	}
	if a.peak != 300 { // 100 and 200 resident together during the growth
		t.Errorf("peak resident = %d, want 300", a.peak)
	}
	st := p.Stats()
	if len(st) != 2 || st[0] != (PoolStats{Device: 0, Size: 200, Grows: 2, Uses: 4}) || st[1] != (PoolStats{Device: 1, Size: 10, Grows: 1, Uses: 1}) {
		t.Errorf("stats = %+v", st)
	}
	if _, err := p.Acquire(0, 0, "s"); err == nil {
		t.Error("zero-size acquire accepted")
	}
	a.failAt = 500
	if _, err := p.Acquire(0, 500, "s"); err == nil || !strings.Contains(err.Error(), "out of memory") {
		t.Errorf("failed growth: %v", err)
	}
	if b := use(0, 150, "s4"); b != b3 { // the old buffer survives a failed growth
		t.Errorf("buffer after failed growth = %v", b)
	}
}

// TestScratchPoolConcurrentHandoff checks, under concurrent enqueues on one
// device, that every enqueue waits for the event recorded by the enqueue
// that used the buffer just before it.
func TestScratchPoolConcurrentHandoff(t *testing.T) {
	a := newFakeAllocator()
	p := NewScratchPool(a)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				stream := fmt.Sprintf("g%d", g)
				l, err := p.Acquire(0, int64(1+(g*50+i)%97), stream)
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.Release(stream); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	last := ""
	for _, e := range a.entries() {
		switch {
		case strings.HasPrefix(e, "wait"):
			if want := "on " + last; !strings.HasSuffix(e, want) {
				t.Fatalf("%q does not wait on the latest event %s", e, last)
			}
		case strings.HasPrefix(e, "record"):
			last = strings.Fields(e)[2]
		}
	}
	if st := p.Stats(); st[0].Uses != 400 || st[0].Size != 97 {
		t.Errorf("stats = %+v", st)
	}
}

func TestComputeScratchMemory(t *testing.T) {
	m := ComputeScratchMemory([]EngineScratch{
		{Device: 0, Bytes: 100, Shared: true},
		{Device: 0, Bytes: 300, Shared: true},
		{Device: 0, Bytes: 50, Shared: false},
		{Device: 1, Bytes: 70, Shared: true},
		{Device: 1, Bytes: 0, Shared: true},
	})
	want := ScratchMemory{WithoutPool: 520, WithPool: 370, Current: 300 + 50 + 70, PoolPerDevice: map[int]int64{0: 300, 1: 70}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
}

func TestTensorRTSharedScratch(t *testing.T) {
	a := newFakeAllocator()
	fac := &fakeFactory{template: fakeEngine{streamable: gib}, scratch: []int64{64, 256, 32, 16}}
	trt := NewTensorRTBackend(fac, a)
	if err := trt.SetOptions(Option{Key: KeySharedScratch, Value: Int(1)}); CodeOf(err) != CodeInvalidArgument {
		t.Errorf("non-bool option: %v", err)
	}
	if err := trt.SetOptions(Option{Key: "unknown", Value: Int(1)}, Option{Key: KeySharedScratch, Value: Bool(true)}); err != nil {
		t.Fatal(err)
	}
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, trt)
	prog, err := Load(buildProgram(t, progTwoEngines...), Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := prog.LoadMethod("forward", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	// Turning the option off affects only engines initialized afterwards.
	trt.SetOptions(Option{Key: KeySharedScratch, Value: Bool(false)})
	own, err := prog.LoadMethod("forward", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	for i, p := range pooled.Plans() {
		if !p.SharedScratch || *p.Scratch != []int64{64, 256}[i] {
			t.Errorf("pooled plan %d: %+v", i, p)
		}
	}
	for _, p := range own.Plans() {
		if p.SharedScratch {
			t.Errorf("own plan uses the pool: %+v", p)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := pooled.Execute(WithStream(context.Background(), "s"), []any{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := own.Execute(context.Background(), []any{1}); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range fac.engines {
		c := e.contexts[0]
		if c.userManaged != (i < 2) || c.enqueues != 2 {
			t.Errorf("engine %d: user managed %v, %d enqueues", i, c.userManaged, c.enqueues)
		}
		for _, s := range c.scratchUsed {
			if (s != nil) != (i < 2) || (s != nil && s.Size() < e.scratch) {
				t.Errorf("engine %d enqueued with scratch %v", i, s)
			}
		}
	}
	if st := trt.Pool().Stats(); len(st) != 1 || st[0].Size != 256 || st[0].Grows != 2 || st[0].Uses != 4 {
		t.Errorf("pool = %+v", st)
	}
	got := trt.ScratchMemory()
	want := ScratchMemory{WithoutPool: 64 + 256 + 32 + 16, WithPool: 256, Current: 256 + 32 + 16, PoolPerDevice: map[int]int64{0: 256}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ScratchMemory = %+v, want %+v", got, want)
	}
	own.Close()
	if got := trt.ScratchMemory(); got.WithoutPool != 64+256 {
		t.Errorf("after Close: %+v", got)
	}
	if err := NewTensorRTBackend(fac, nil).SetOptions(Option{Key: KeySharedScratch, Value: Bool(true)}); CodeOf(err) != CodeNotSupported {
		t.Errorf("pool without allocator: %v", err)
	}
}

// TestScratchPoolFailedHandoff checks that a failed event record never lets
// the next user of the buffer run unordered: the pool synchronizes the
// stream instead, and when that fails too it refuses further use.
func TestScratchPoolFailedHandoff(t *testing.T) {
	a := newFakeAllocator()
	p := NewScratchPool(a)
	acquire := func(stream string) *ScratchLease {
		t.Helper()
		l, err := p.Acquire(0, 64, stream)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if err := acquire("s1").Release("s1"); err != nil {
		t.Fatal(err)
	}
	a.recordErr = errors.New("cudaEventRecord failed")
	if err := acquire("s2").Release("s2"); err != nil {
		t.Fatalf("release with a synchronize fallback: %v", err)
	}
	a.recordErr = nil
	if err := acquire("s3").Release("s3"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"alloc d0 #1 64", "record d0 e1 on s1",
		"wait d0 s2 on e1", "record-fail d0 on s2", "sync d0 s2",
		// s2 finished: s3 needs no wait, and must not wait on the stale e1 alone.
		"record d0 e2 on s3",
	}
	if got := a.entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("device calls:\n got %q\nwant %q", got, want)
	}

	a.recordErr, a.syncErr = errors.New("record failed"), errors.New("sync failed")
	err := acquire("s4").Release("s4")
	if err == nil || !strings.Contains(err.Error(), "sync failed") || !strings.Contains(err.Error(), "record failed") {
		t.Fatalf("release with both failing: %v", err)
	}
	a.recordErr, a.syncErr = nil, nil
	if _, err := p.Acquire(0, 64, "s5"); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Errorf("acquire after an unordered handoff: %v", err)
	}
	if _, err := p.Acquire(1, 64, "s5"); err != nil {
		t.Errorf("another device's pool is affected: %v", err)
	}
}
