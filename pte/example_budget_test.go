package pte_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/pte"
)

// A pipeline step: open a program, read each TensorRT delegate's compile
// specs with the public lookup (keys compared as ExecuTorch compares them),
// give every engine a 512 MiB weight streaming budget and write the
// program out, its engines streamed from the input.
func Example_budget() {
	f, err := pte.Open("testdata/url/model.pte")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	budget, err := compilespec.BudgetOf(512 << 20)
	if err != nil {
		log.Fatal(err)
	}
	for _, plan := range f.Program.Plans() {
		for i, d := range plan.Delegates {
			b, err := compilespec.SpecBudget(d.CompileSpecs)
			if err != nil {
				log.Fatal(err)
			}
			dev, _, _ := compilespec.Get(d.CompileSpecs, compilespec.KeyTargetDevice)
			fmt.Printf("%s delegate %d on %s: budget %s\n", plan.Name, i, dev, b)
			d.CompileSpecs = compilespec.Set(d.CompileSpecs, compilespec.KeyWeightStreamingBudget, budget.Spec())
		}
	}

	segments, err := f.SegmentReaders()
	if err != nil {
		log.Fatal(err)
	}
	out := filepath.Join(os.TempDir(), "example-budget.pte")
	defer os.Remove(out)
	if _, err := pte.WriteFile(out, f.Program, segments, nil); err != nil {
		log.Fatal(err)
	}

	g, err := pte.Open(out)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	for _, plan := range g.Program.Plans() {
		b, _ := compilespec.SpecBudget(plan.Delegates[0].CompileSpecs)
		fmt.Printf("written: %s budget %s\n", plan.Name, b)
	}
	// Output:
	// prefill delegate 0 on cuda:0: budget 1 MiB
	// decode delegate 0 on cuda:0: budget 256 KiB
	// written: prefill budget 512 MiB
	// written: decode budget 512 MiB
}
