package httprange

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// connServer serves h and counts the connections open on the server's
// side.
type connServer struct {
	*httptest.Server
	mu   sync.Mutex
	open map[net.Conn]bool
}

func newConnServer(t *testing.T, h http.Handler) *connServer {
	s := &connServer{Server: httptest.NewUnstartedServer(h), open: map[net.Conn]bool{}}
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch st {
		case http.StateNew:
			s.open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(s.open, c)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *connServer) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// waitOpen waits up to two seconds for the server to count want open
// connections and returns the count it saw last.
func (s *connServer) waitOpen(want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := s.openConns()
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseClosesConnections: a Reader's Close, and an Open that fails,
// leave none of the connections of the transport Open made open. The
// transport's pool kept them for its idle timeout (90 s): FuzzTransport,
// opening a Reader per input, ran out of file descriptors, and every
// request then hung until the server could accept again.
func TestCloseClosesConnections(t *testing.T) {
	o := &object{}
	o.set(pattern(200<<10, 3), `"v1"`, tZero)
	srv := newConnServer(t, o)

	r, err := Open(t.Context(), srv.URL, &Options{BlockSize: 4096, Parallelism: 3, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 150<<10) // more than directBlocks blocks: parallel requests
	if _, err := r.ReadAt(p, 10); err != nil {
		t.Fatal(err)
	}
	if n := srv.openConns(); n == 0 {
		t.Fatal("the server saw no connection kept open after the reads; the test shows nothing")
	}
	r.Close()
	if n := srv.waitOpen(0); n != 0 {
		t.Errorf("%d connections still open after Close", n)
	}

	// An Open that fails: its Reader is never returned, so never closed.
	// The 404 has no body, so its connection goes back to the pool.
	missing := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) }))
	if _, err := Open(t.Context(), missing.URL, &Options{MaxRetries: -1}); err == nil {
		t.Fatal("Open of a 404 succeeded")
	}
	if n := missing.waitOpen(0); n != 0 {
		t.Errorf("%d connections still open after a failed Open", n)
	}
}

// TestCloseLeavesCallersTransport: the connections of a transport the
// caller gave in Options.Client are the caller's, which may share them
// between Readers: Close leaves them in its pool.
func TestCloseLeavesCallersTransport(t *testing.T) {
	o := &object{}
	o.set(pattern(64<<10, 5), `"v1"`, tZero)
	srv := newConnServer(t, o)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	r, err := Open(t.Context(), srv.URL, &Options{Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	time.Sleep(50 * time.Millisecond)
	if n := srv.openConns(); n != 1 {
		t.Errorf("%d connections open after Close with the caller's transport, want its 1 idle one", n)
	}
}
