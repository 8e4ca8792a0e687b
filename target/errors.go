package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pikit-go/pikit/internal/textcut"
)

// Sentinel errors of the network targets; test for them with errors.Is.
var (
	// ErrMissingKey means Open found no API key for a provider that needs
	// one. The error names the environment variable to set; nothing was
	// sent anywhere.
	ErrMissingKey = errors.New("missing API key")
	// ErrUnauthorized means the provider rejected the key (HTTP 401).
	// It is never retried, and a run should stop on it: every later call
	// would fail the same way.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrMalformedResponse means the provider answered with a body that is
	// not the JSON its API documents. It is retried.
	ErrMalformedResponse = errors.New("malformed response")
	// ErrConnection means no response arrived: the connection was refused,
	// reset or dropped part-way. It is retried.
	ErrConnection = errors.New("connection failed")
)

// Error is what a network target returns when a call fails. Its text has
// every secret redacted (see Redact), and it keeps no reference to the
// request, whose headers carry the key.
type Error struct {
	// Provider names the target's provider: "openai", "anthropic", "ollama".
	Provider string
	// StatusCode is the HTTP status of the response, 0 when none arrived.
	StatusCode int
	// RetryAfter is the wait the server asked for (Retry-After or
	// retry-after-ms), 0 when it asked for none.
	RetryAfter time.Duration
	// Message says what went wrong: the server's own message for an HTTP
	// error, else the transport's. It is already redacted.
	Message string
	// Err is what the error wraps: the sentinel ErrUnauthorized,
	// ErrMalformedResponse or ErrConnection, a *ResponseTooLargeError or a
	// *RedirectError (matching ErrResponseTooLarge and ErrRedirect), a
	// context error, or nil.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	switch {
	case e.StatusCode != 0:
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if text := http.StatusText(e.StatusCode); text != "" {
			b.WriteString(" " + text)
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString("request failed")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel the error wraps.
func (e *Error) Unwrap() error { return e.Err }

// Classify says whether a failed call is worth retrying, how long the
// server asked the caller to wait (0 when it did not say), and the HTTP
// status (0 when no response arrived). It is the one place that decides
// retries: 408, 429 and 5xx statuses, connection failures, timed-out
// attempts and malformed bodies are retryable; other statuses (400, 401,
// 403, 404, ...), redirects, bodies over the size limit and cancellation
// are not.
func Classify(err error) (retryable bool, retryAfter time.Duration, status int) {
	if err == nil {
		return false, 0, 0
	}
	var te *Error
	if errors.As(err, &te) {
		status, retryAfter = te.StatusCode, te.RetryAfter
	}
	if status != 0 {
		return retryableStatus(status), retryAfter, status
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, ErrResponseTooLarge), errors.Is(err, ErrRedirect):
		// The same request would get the same too-large or redirecting
		// answer.
		return false, 0, 0
	case errors.Is(err, ErrMalformedResponse), errors.Is(err, ErrConnection),
		errors.Is(err, context.DeadlineExceeded), isTransportError(err):
		return true, 0, 0
	}
	return false, 0, 0
}

// retryableStatus reports whether a response with this status may succeed
// when sent again.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// isTransportError reports whether err comes from the network rather than
// from building the request.
func isTransportError(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
}

// parseRetryAfter reads the wait a response asks for: retry-after-ms
// (milliseconds, as OpenAI and Anthropic send it), else Retry-After as
// seconds or as an HTTP date, measured from now. It returns 0 when neither
// header holds a usable value.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Bounds on what an error quotes: of a server's message, and of an
// unexpected body.
const (
	maxMessage     = 2000
	maxBodySnippet = 300
)

// malformedError reports a response body that could not be decoded.
func malformedError(provider, why string, body []byte, secrets []string) error {
	msg := Redact(why, secrets...)
	if s := bodySnippet(body, secrets); s != "" {
		msg += "; body: " + s
	} else {
		msg += "; empty body"
	}
	return &Error{Provider: provider, Message: msg, Err: ErrMalformedResponse}
}

// serverMessage is what an error answer said: its message with its error
// code in brackets, or the start of its body when it has no message.
func serverMessage(message, code string, body []byte, secrets []string) string {
	message, code = strings.TrimSpace(message), strings.TrimSpace(code)
	if message == "" {
		message = bodySnippet(body, secrets)
	}
	switch {
	case code == "":
		return Redact(message, secrets...)
	case message == "":
		return Redact(code, secrets...)
	}
	return Redact(message+" ("+code+")", secrets...)
}

// bodySnippet returns the start of a body on one line, redacted, cut at
// maxBodySnippet bytes.
func bodySnippet(b []byte, secrets []string) string {
	return cut(strings.Join(strings.Fields(Redact(string(b), secrets...)), " "), maxBodySnippet)
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string { return textcut.Clip(s, n, "…") }
