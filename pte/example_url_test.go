package pte_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/pte"
)

// Open a program where it lives, on an HTTP server, and list its engines
// without downloading them. Any server that honours Range requests will
// do; here a loopback file server stands in for an artifact store.
func ExampleOpenURL() {
	srv := httptest.NewServer(http.FileServer(http.Dir("testdata/url")))
	defer srv.Close()

	// Credentials come from PTEKIT_HTTP_BEARER_TOKEN / PTEKIT_HTTP_HEADERS.
	header, err := httprange.HeaderFromEnv(nil)
	if err != nil {
		log.Fatal(err)
	}
	// A presigned URL's query is sent, but never shown in errors.
	url := srv.URL + "/model.pte?X-Amz-Signature=secret"
	f, err := pte.OpenURL(context.Background(), url, &pte.OpenURLOptions{HTTP: httprange.Options{Header: header}})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for i, plan := range f.Program.Plans() {
		for j, d := range plan.Delegates {
			payload, err := f.DelegateData(i, j) // lazy: nothing is fetched yet
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s delegate %d: %s, %d bytes\n", plan.Name, j, d.ID, payload.Size())
		}
	}
	stats := f.ReaderAt().(*httprange.Reader).Stats()
	fmt.Printf("%d request(s) for a %d-byte program\n", stats.Requests, f.Size)
	// Output:
	// prefill delegate 0: TensorRTBackend, 296 bytes
	// decode delegate 0: TensorRTBackend, 300 bytes
	// 1 request(s) for a 2220-byte program
}
