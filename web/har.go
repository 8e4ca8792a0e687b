package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A session keeps, beside its trace, each exchange in the HTTP Archive
// (HAR 1.2) format, which browsers' developer tools and proxies read:
// pikit web run --har DIR writes one file per cell. Request headers that
// carry credentials (Authorization, Cookie, Proxy-Authorization) are left
// out, and bodies are kept up to the trace's bound.

// harLog is a HAR file's one member.
type harLog struct {
	Log struct {
		Version string     `json:"version"`
		Creator harCreator `json:"creator"`
		Pages   []any      `json:"pages"`
		Entries []harEntry `json:"entries"`
	} `json:"log"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type harEntry struct {
	Started  string      `json:"startedDateTime"`
	Time     float64     `json:"time"`
	Request  harRequest  `json:"request"`
	Response harResponse `json:"response"`
	Cache    struct{}    `json:"cache"`
	Timings  harTimings  `json:"timings"`
	// Comment says what pikit made of the request: a fetch, or the sink
	// it was.
	Comment string `json:"comment,omitempty"`
}

type harRequest struct {
	Method      string       `json:"method"`
	URL         string       `json:"url"`
	HTTPVersion string       `json:"httpVersion"`
	Cookies     []any        `json:"cookies"`
	Headers     []harNV      `json:"headers"`
	QueryString []harNV      `json:"queryString"`
	PostData    *harPostData `json:"postData,omitempty"`
	HeadersSize int          `json:"headersSize"`
	BodySize    int          `json:"bodySize"`
}

type harPostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

type harResponse struct {
	Status      int        `json:"status"`
	StatusText  string     `json:"statusText"`
	HTTPVersion string     `json:"httpVersion"`
	Cookies     []any      `json:"cookies"`
	Headers     []harNV    `json:"headers"`
	Content     harContent `json:"content"`
	RedirectURL string     `json:"redirectURL"`
	HeadersSize int        `json:"headersSize"`
	BodySize    int        `json:"bodySize"`
}

type harContent struct {
	Size     int    `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

type harTimings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// credentialHeaders are request headers a HAR file does not keep.
var credentialHeaders = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

// capture is a ResponseWriter that keeps the status and the first
// maxKept bytes of what is written.
type capture struct {
	http.ResponseWriter
	status int
	size   int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.size += len(p)
	if room := maxKept - c.body.Len(); room > 0 {
		c.body.Write(p[:min(len(p), room)])
	}
	return c.ResponseWriter.Write(p)
}

// readBody reads a request's body up to maxBody bytes (the rest is not
// read), and gives the request that much back to parse.
func readBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// harEntryOf describes one exchange.
func harEntryOf(r *http.Request, base string, body []byte, c *capture, start time.Time, what string) harEntry {
	e := harEntry{Started: start.UTC().Format(time.RFC3339Nano), Comment: what}
	elapsed := float64(time.Since(start).Microseconds()) / 1000
	e.Time, e.Timings = elapsed, harTimings{Wait: elapsed}
	e.Request = harRequest{Method: r.Method, URL: base + r.URL.RequestURI(), HTTPVersion: r.Proto, Cookies: []any{},
		Headers: []harNV{}, QueryString: []harNV{}, HeadersSize: -1, BodySize: len(body)}
	for name, vs := range r.Header {
		if credentialHeaders[http.CanonicalHeaderKey(name)] {
			continue
		}
		for _, v := range vs {
			e.Request.Headers = append(e.Request.Headers, harNV{name, v})
		}
	}
	for name, vs := range r.URL.Query() {
		for _, v := range vs {
			e.Request.QueryString = append(e.Request.QueryString, harNV{name, v})
		}
	}
	if len(body) > 0 {
		e.Request.PostData = &harPostData{MimeType: r.Header.Get("Content-Type"), Text: strings.ToValidUTF8(string(body), "\uFFFD")}
	}
	typ := c.Header().Get("Content-Type")
	e.Response = harResponse{Status: c.status, StatusText: http.StatusText(c.status), HTTPVersion: r.Proto, Cookies: []any{},
		Headers: []harNV{{"Content-Type", typ}}, RedirectURL: "", HeadersSize: -1, BodySize: c.size}
	e.Response.Content = harContent{Size: c.size, MimeType: typ}
	if mt, _, _ := mime.ParseMediaType(typ); strings.HasPrefix(mt, "text/") {
		e.Response.Content.Text = strings.ToValidUTF8(c.body.String(), "\uFFFD")
	}
	return e
}

// HAR returns the session's exchanges as a HAR 1.2 file.
func (s *Session) HAR() ([]byte, error) {
	var h harLog
	h.Log.Version = "1.2"
	h.Log.Creator = harCreator{Name: "pikit web", Version: "1"}
	h.Log.Pages = []any{}
	s.mu.Lock()
	h.Log.Entries = append([]harEntry{}, s.har...)
	s.mu.Unlock()
	return json.MarshalIndent(h, "", " ")
}

// writeHAR writes the session's HAR file as dir/KEY.har (key: its
// cell's); nothing when dir is "".
func (s *Session) writeHAR(dir, key string) error {
	if dir == "" {
		return nil
	}
	har, err := s.HAR()
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, key+".har"), har, 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing the cell's HAR file: %w", err)
	}
	return nil
}
