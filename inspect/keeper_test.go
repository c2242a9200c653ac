package inspect

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// TestKeeper: ranges asked for before a pass reaches them are held whole
// however the reads cut them, ranges asked for by a then as the pass goes
// are held too when it has not passed them or ranges held have the bytes it
// passed, a then given with a range asked for already is called, the
// longest of many ranges at one offset is found, handed-on ranges reach their
// sink in order after the held bytes of the same read, and a reader over
// the keeper answers held bytes from memory and the others from the file.
func TestKeeper(t *testing.T) {
	data := randomBytes(10_000, 7)
	k := newKeep()
	k.want(100, 50, func(k *keeper, b []byte) {
		k.want(160, 10, nil) // ahead: held
		k.want(120, 5, nil)  // passed already: not held
	})
	k.want(100, 50, nil) // asked twice: held once
	k.want(9_990, 10, nil)
	// Asked first without a then and again with one (a payload that a
	// delegate of another backend names first): the then is called.
	k.want(300, 32, nil)
	k.want(300, 32, func(k *keeper, b []byte) {
		k.want(310, 40, nil) // begins in bytes held: held
	})
	// Ten ranges at one offset: the longest is found.
	for n := range int64(10) {
		k.want(5_000, 40-n, nil)
	}
	var flowed []byte
	k.pass(150, 30, func(off int64, b []byte) {
		held, ok := k.at(100, 50)
		require.True(t, ok, "the bytes held are there before the same read is handed on")
		assert.Equal(t, data[100:150], held)
		assert.Equal(t, int64(150+len(flowed)), off)
		flowed = append(flowed, b...)
	})
	for pos := 0; pos < len(data); pos += 7 {
		end := min(pos+7, len(data))
		k.feed(int64(pos), data[pos:end])
		k.flowTo(int64(pos), data[pos:end])
	}
	assert.Equal(t, data[150:180], flowed)
	for _, r := range [][2]int64{{100, 50}, {110, 20}, {160, 10}, {9_990, 10}, {310, 40}, {5_000, 40}} {
		got, ok := k.at(r[0], r[1])
		require.True(t, ok, "%v held", r)
		assert.Equal(t, data[r[0]:r[0]+r[1]], got)
	}
	for _, r := range [][2]int64{{155, 5}, {145, 10}, {0, 1}} {
		_, ok := k.at(r[0], r[1])
		assert.False(t, ok, "%v not held", r)
	}
	rec := testkit.NewRangeReaderAt(bytes.NewReader(data))
	kr := k.reader(rec)
	p := make([]byte, 20)
	_, err := kr.ReadAt(p, 105)
	require.NoError(t, err)
	assert.Equal(t, data[105:125], p)
	assert.Zero(t, rec.Bytes(), "held bytes come from memory")
	_, err = io.ReadFull(io.NewSectionReader(kr, 145, 10), p[:10])
	require.NoError(t, err)
	assert.Equal(t, data[145:155], p[:10])
	assert.Equal(t, int64(10), rec.Bytes(), "the others from the file")
}

// TestHoldTasks: a pairing whose side in one file is read wholly before
// the other's begins is made as the other is read, only the first held; a
// pairing with a side in memory holds nothing; one whose sides are read at
// the same step holds both; beyond heldBudget, none is held and both
// sides are hashed as they are read.
func TestHoldTasks(t *testing.T) {
	file := func(off int64) constSource { return constSource{off: off, n: 100} }
	mem := constSource{inline: true, n: 100, mem: make([]byte, 100)}
	task := func(a, b constSource) *constTask {
		d := newDataCmp(100, 100, pte.ScalarTypeFLOAT)
		d.want(25)
		return &constTask{src: [2]constSource{a, b}, limit: 100, cmps: []*dataCmp{d}}
	}
	// Byte x of A is read at step x/1000, of B at step x/1000 too.
	step := func(x int64) int64 { return x / 1000 }
	aFirst := task(file(1000), file(2000)) // A at step 1, B at 2: B flows
	bFirst := task(file(3000), file(500))  // B at step 0, A at 3: A flows
	inMem := task(mem, file(4000))         // B flows, nothing held
	same := task(file(5000), file(5500))   // both at step 5: both held
	over := task(file(6000), file(6500))   // beyond the budget
	defer func(b int64) { heldBudget = b }(heldBudget)
	heldBudget = 500
	keeps := [2]*keeper{newKeep(), newKeep()}
	held, flowing, hashed := holdTasks([]*constTask{aFirst, bFirst, inMem, same, over}, keeps, [2]func(int64) int64{step, step})
	assert.Equal(t, []*constTask{same}, held)
	assert.Equal(t, []*constTask{aFirst, bFirst, inMem}, flowing)
	assert.Equal(t, []*constTask{over}, hashed)
	assert.Equal(t, [2]int{2, 2}, [2]int{len(keeps[0].store.waiting), len(keeps[1].store.waiting)}, "A holds aFirst's and same's, B bFirst's and same's")
	assert.Equal(t, [2]int{2, 3}, [2]int{len(keeps[0].flow.waiting), len(keeps[1].flow.waiting)}, "over hashed on both sides")
}
