package conformance

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

// capture is a model server that records each request's body and headers
// and answers every one with reply (JSON).
type capture struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	header []http.Header
	reply  []byte
}

func newCapture(t *testing.T, reply []byte) *capture {
	t.Helper()
	c := &capture{reply: reply}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.header = append(c.header, r.Header.Clone())
		reply := c.reply
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply)
	}))
	t.Cleanup(c.Close)
	return c
}

// last returns the last request's body and headers.
func (c *capture) last(t *testing.T) ([]byte, http.Header) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) == 0 {
		t.Fatal("the server got no request")
	}
	return c.bodies[len(c.bodies)-1], c.header[len(c.header)-1]
}

// sameJSON fails t unless a and b hold the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var av, bv any
	if err := json.Unmarshal(a, &av); err != nil {
		t.Fatalf("%s: pikit's body is not JSON: %v\n%s", what, err, a)
	}
	if err := json.Unmarshal(b, &bv); err != nil {
		t.Fatalf("%s: the SDK's body is not JSON: %v\n%s", what, err, b)
	}
	if !reflect.DeepEqual(av, bv) {
		t.Errorf("%s: pikit sends\n%s\nthe SDK sends\n%s", what, a, b)
	}
}
