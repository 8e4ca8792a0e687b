package proxy

import (
	"fmt"
	"io"
	"net/http"

	"github.com/pikit-go/pikit/target"
)

// ModelHandler serves a target as a model API in the three formats the
// proxy reads (POST …/chat/completions, …/responses, …/messages), streamed
// or not: mock:obedient behind it is an offline stand-in for a real
// provider, for tests and demos of agents.
func ModelHandler(t target.Target) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := formatFor(r.Method, r.URL.Path)
		if f == nil {
			apiError(w, http.StatusNotFound, fmt.Sprintf("%s %s: this server answers POST …/chat/completions, …/responses and …/messages", r.Method, r.URL.Path))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		if err != nil || len(body) > maxRequestBytes {
			apiError(w, http.StatusBadRequest, "reading the request failed or it is over the size limit")
			return
		}
		o, err := parseJSON(body)
		if err != nil {
			apiError(w, http.StatusBadRequest, "the request body is not a JSON object: "+err.Error())
			return
		}
		req := f.parseRequest(o)
		m, _ := decode(body) // parseJSON checked it
		resp, err := t.Chat(r.Context(), nameResults(f.toRequest(m)))
		if err != nil {
			apiError(w, http.StatusBadGateway, err.Error())
			return
		}
		f.writeResponse(w, resp, req.model, req.stream)
	})
}
