package check_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/ptekit/ptekit/check"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// A pipeline asks check.Program whether a program will load, and gets the
// verdict `pteinspect --verify` prints: here a TensorRT delegate with its
// weight_streaming_budget key given twice, which pte.File.Verify (the
// container's checks alone) passes and TensorRTBackend init refuses.
func ExampleProgram() {
	progs, err := testprog.Build()
	if err != nil {
		log.Fatal(err)
	}
	data := progs["budget_twice"]
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Println("pte.File.Verify errors:", countErrors(f.Verify()))
	probs, err := check.Program(f)
	if err != nil {
		log.Fatal(err)
	}
	if first, n, bad := check.FirstError(probs); bad {
		fmt.Printf("check.Program: %d error(s), first in method %s at %s [%s]\n", n, first.Method, first.Path, first.Code)
	}
	// Output:
	// pte.File.Verify errors: 0
	// check.Program: 1 error(s), first in method forward at execution_plan[0].delegates[0].compile_specs [InvalidProgram]
}

func countErrors(fds []pte.Finding) int {
	n := 0
	for _, fd := range fds {
		if fd.Severity == pte.SeverityError {
			n++
		}
	}
	return n
}
