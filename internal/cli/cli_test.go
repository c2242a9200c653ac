package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
)

// TestFlagUsagesNoBoolNoise: boolean flags show no "[=true|false]" (pflag's
// formatter does), value flags their backquoted name, defaults follow.
func TestFlagUsagesNoBoolNoise(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.BoolP("long", "l", false, "show everything")
	fs.String("method", "", "only the method `NAME`")
	fs.Uint64("align", 128, "alignment in bytes")
	got := FlagUsages(fs)
	assert.Contains(t, fs.FlagUsages(), "[=true|false]", "pflag's own formatter, which this replaces")
	assert.NotContains(t, got, "[=")
	assert.Regexp(t, `(?m)^  -l, --long +show everything$`, got)
	assert.Regexp(t, `(?m)^      --method NAME +only the method NAME$`, got)
	assert.Regexp(t, `(?m)^      --align uint +alignment in bytes \(default 128\)$`, got)
}

func TestVersionLine(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "github.com/ptekit/ptekit", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-03T08:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	assert.Equal(t, "pteinspect github.com/ptekit/ptekit v1.2.0 (revision 0123456789ab, 2026-12-03T08:00:00Z, modified, go1.26)", versionLine("pteinspect", info))
	info.Settings, info.Main.Version = nil, ""
	assert.Equal(t, "pteexport github.com/ptekit/ptekit (devel) (revision unknown, go1.26)", versionLine("pteexport", info))
	var b strings.Builder
	PrintVersion(&b, "pteinspect")
	assert.True(t, strings.HasPrefix(b.String(), "pteinspect "))
}

// TestMessage: one line in the user's terms, no Go package chain, a
// missing file said as such (issue 11 item 9).
func TestMessage(t *testing.T) {
	chain := fmt.Errorf("export: rebake: empty.pte: %w", errors.New("pte: file is 0 bytes\nsecond line"))
	assert.Equal(t, "empty.pte: file is 0 bytes second line", Message(chain))
	_, err := os.Open(filepath.Join(t.TempDir(), "nope.pte"))
	assert.Regexp(t, `^\S+nope.pte does not exist$`, Message(err))
	assert.Regexp(t, `^manifest: \S+nope.pte does not exist$`, Message(fmt.Errorf("manifest: %w", err)))
	assert.Equal(t, "invalid weight_streaming_budget", Message(errors.New("runtime: compilespec: invalid weight_streaming_budget")))
}

// TestTuneBatchGC: without GOGC in the environment the collector runs at
// BatchGCPercent; with it, the percent in force is left alone.
func TestTuneBatchGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	unset := func(string) (string, bool) { return "", false }
	if !TuneBatchGC(unset) {
		t.Fatal("not tuned without GOGC")
	}
	if got := debug.SetGCPercent(100); got != BatchGCPercent {
		t.Fatalf("GC percent %d after TuneBatchGC, want %d", got, BatchGCPercent)
	}
	batchGCOn.Store(false) // the percent below is this test's, not the live heap's
	debug.SetGCPercent(70)
	set := func(k string) (string, bool) { return "70", k == "GOGC" }
	if TuneBatchGC(set) {
		t.Fatal("tuned although GOGC is set")
	}
	if got := debug.SetGCPercent(100); got != 70 {
		t.Fatalf("GC percent %d after TuneBatchGC with GOGC=70, want 70 kept", got)
	}
}

// TestBatchGCPercent: the collector may let a small heap grow fivefold, a
// larger one by batchGCHeadroom, and one past batchGCLarge also by half
// of the rest, never by half of it all.
func TestBatchGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, BatchGCPercent},
		{1 << 20, BatchGCPercent},
		{5 << 19, BatchGCPercent},
		{4 << 20, 250},
		{10 << 20, 100},
		{25 << 20, 40},
		{32 << 20, 31},
		{64 << 20, 40},  // 10 + 16 MiB
		{128 << 20, 45}, // 10 + 48 MiB
		{1 << 40, 49},
	} {
		assert.Equal(t, c.want, batchGCPercent(c.live), "live heap %d", c.live)
	}
}

// TestBatchGCFollowsLiveHeap: after a collection, TuneBatchGC's setting is
// batchGCPercent of the live heap, whatever the percent was, and it stops
// following once turned off.
func TestBatchGCFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	defer batchGCOn.Store(false)
	// A live heap of 128 MiB of pointer-free memory (cheap to mark).
	live := make([]byte, 128<<20)
	TuneBatchGC(func(string) (string, bool) { return "", false })
	debug.SetGCPercent(300)
	got := 300
	want := batchGCPercent(128 << 20) // 45, from 120 to 133 MiB live
	for deadline := time.Now().Add(2 * time.Second); got != want && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(time.Millisecond)
		got = debug.SetGCPercent(300)
	}
	runtime.KeepAlive(live)
	assert.Equal(t, want, got, "GC percent after a collection with 128 MiB live")
	batchGCOn.Store(false)
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, 300, debug.SetGCPercent(100), "GC percent after the following stopped")
}
