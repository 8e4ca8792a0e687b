package target

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// call is one request of a network target: a JSON body posted to a path
// under the base URL, with the target's headers.
type call struct {
	provider string
	client   *http.Client
	url      string // the endpoint: endpointURL of the base URL and the API's path
	header   http.Header
	secrets  []string
	// message reads an error answer's message and code from its body.
	message func(body []byte) (message, code string)
}

// endpointURL joins a base URL and a path as the SDKs did: the base read
// as a directory, its query and fragment dropped.
func endpointURL(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		u.RawPath = ""
	}
	u.RawQuery, u.Fragment = "", ""
	return u.JoinPath(path).String(), nil
}

// post sends body and returns the body of a successful answer, or an
// *Error: the server's status and message, a refused redirect or a body
// over the limit, a connection that failed or dropped, or the context's
// end. Nothing it returns holds the request or its headers.
func (c *call) post(ctx context.Context, body any) ([]byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{Provider: c.provider, Message: Redact(err.Error(), c.secrets...)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(payload))
	if err != nil {
		return nil, &Error{Provider: c.provider, Message: Redact(err.Error(), c.secrets...)}
	}
	req.Header = c.header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := c.client.Do(req)
	if err != nil {
		return nil, transportError(c.provider, err, c.secrets)
	}
	defer res.Body.Close()
	b, rerr := io.ReadAll(res.Body)
	if res.StatusCode >= 400 {
		e := &Error{Provider: c.provider, StatusCode: res.StatusCode, RetryAfter: parseRetryAfter(res.Header, time.Now())}
		msg, code := c.message(b)
		e.Message = cut(serverMessage(msg, code, b, c.secrets), maxMessage)
		if e.StatusCode == http.StatusUnauthorized {
			e.Err = ErrUnauthorized
		}
		return nil, e
	}
	if rerr != nil {
		return nil, transportError(c.provider, rerr, c.secrets)
	}
	if res.StatusCode/100 != 2 {
		return nil, &Error{Provider: c.provider, StatusCode: res.StatusCode, Message: bodySnippet(b, c.secrets)}
	}
	return b, nil
}

// transportError turns a failed send or read into an *Error whose text
// has the secrets redacted. The error is not kept: a *url.Error names the
// URL, which may carry a password.
func transportError(provider string, err error, secrets []string) error {
	e := &Error{Provider: provider}
	var tl *ResponseTooLargeError
	var re *RedirectError
	switch {
	case errors.As(err, &tl):
		e.Err = &ResponseTooLargeError{Limit: tl.Limit}
	case errors.As(err, &re):
		e.Err = &RedirectError{StatusCode: re.StatusCode, Location: describeLocation(re.Location, secrets)}
	case errors.Is(err, context.Canceled):
		e.Err = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.Err = context.DeadlineExceeded
	case isTransportError(err):
		e.Err = ErrConnection
		e.Message = err.Error()
	default:
		e.Message = err.Error()
	}
	e.Message = cut(Redact(e.Message, secrets...), maxMessage)
	return e
}
