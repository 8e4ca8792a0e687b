package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/pikit-go/pikit/internal/agentenv"
	"github.com/pikit-go/pikit/internal/safefile"
)

// A session keeps, beside its trace, each exchange in the HTTP Archive
// (HAR 1.2) format, which browsers' developer tools and proxies read:
// pikit web run --har DIR (and pikit web serve --har DIR) writes one file
// per cell. A request header named like a credential (Authorization,
// Cookie, X-Api-Key, *-Token) or whose value is shaped like one
// (agentenv.SecretValue: a JWT, a URL with a password, an sk- key) keeps
// its name and loses its value, and bodies are kept up to the trace's
// bound.

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

// redacted stands in a HAR file for the value of a request header that
// carries a credential.
const redacted = "[redacted by pikit]"

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
		secret := agentenv.Secret(name)
		for _, v := range vs {
			if secret || agentenv.SecretValue(v) {
				v = redacted
			}
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

// HARFiles is the directory a run writes each cell's HAR file into, as
// KEY.har (the cell's key). Every file is created new inside it: a
// symbolic or hard link planted under a cell's name (which whoever wrote
// the config can compute) is never written through, and a name already
// taken is an error, but for a resumed run, which replaces its own earlier
// files (regular files with no other name).
type HARFiles struct{ dir *safefile.Dir }

// OpenHAR opens the directory at path for a run's HAR files, making it
// when missing; resume says the run resumes an earlier one into it.
func OpenHAR(path string, resume bool) (*HARFiles, error) {
	d, err := safefile.Open(path, resume)
	if err != nil {
		return nil, err
	}
	return &HARFiles{dir: d}, nil
}

// Close releases the directory; a nil HARFiles has nothing to release.
func (h *HARFiles) Close() error {
	if h == nil {
		return nil
	}
	return h.dir.Close()
}

// write writes session s's HAR file as KEY.har; nothing when h is nil.
func (h *HARFiles) write(s *Session, key string) error {
	if h == nil {
		return nil
	}
	har, err := s.HAR()
	if err == nil {
		err = h.dir.WriteFile(key+".har", har, 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing the cell's HAR file: %w", err)
	}
	return nil
}
