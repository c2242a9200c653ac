package pte_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/ptekit/ptekit/pte"
)

// Open a program, report a malformed file with its location, and list the
// delegates without reading their payloads.
func ExampleOpen() {
	f, err := pte.Open("model.pte")
	if err != nil {
		var fe *pte.FormatError
		if errors.As(err, &fe) {
			log.Fatalf("bad program at byte %d (%s): %s [%s]", fe.Off, fe.Path, fe.Msg, fe.Code)
		}
		log.Fatal(err)
	}
	defer f.Close()
	for i, plan := range f.Program.Plans() {
		for j, d := range plan.Delegates {
			payload, err := f.DelegateData(i, j) // lazy: nothing is read yet
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s delegate %d: %s, %d bytes at file offset %d\n",
				plan.Name, j, d.ID, payload.Size(), payload.FileOffset)
		}
	}
}
